# cmake -DDEST=<dir> "-DFILES=a;b;..." -P copy_seeds.cmake: a target's starting corpus, refreshed at build time.
file(MAKE_DIRECTORY ${DEST})
foreach(f IN LISTS FILES)
  get_filename_component(parent ${f} DIRECTORY)
  get_filename_component(parent ${parent} NAME)
  get_filename_component(name ${f} NAME)
  # Fixture folders reuse file names (every model has a config.json): prefix the folder.
  file(COPY_FILE ${f} ${DEST}/${parent}-${name} ONLY_IF_DIFFERENT)
endforeach()
