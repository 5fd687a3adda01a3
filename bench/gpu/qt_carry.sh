#!/usr/bin/env bash
# The window's toolkit for the GPU machine, which has no Qt: Debian's Qt 6 (the modules the window uses, their
# CMake packages, moc / rcc / uic, the offscreen platform plugin), QCustomPlot, the SQLite, OpenGL and EGL
# headers, the shared libraries all of these need, and a few fonts, in one archive to carry.
#
#   bash bench/gpu/qt_carry.sh pack     on a Debian 12 machine with the build's packages (scripts/setup): writes
#                                       .device-carry/qt6-window.tar.xz
#   source bench/gpu/qt_carry.sh use    on the GPU machine (bench/run_gpu.sh does it for the window topic):
#                                       unpacks it to $QT_CARRY_DIR and exports what the build and the window need
#
# Only the libraries the GPU machine lacks are put on the library path: its own newer ones (same soname) stay.
ARCHIVE=.device-carry/qt6-window.tar.xz

qt_carry_pack() {
  set -euo pipefail
  local multiarch stage root
  multiarch=$(gcc -print-multiarch)
  stage=$(mktemp -d)
  root=$stage/qt6-window
  mkdir -p "$root/runtime" "$root/fonts"
  local packages=(qt6-base-dev qt6-base-dev-tools libqt6core6 libqt6gui6 libqt6widgets6 libqt6network6
                  libqt6printsupport6 libqt6test6 libqt6dbus6 libqt6svg6 qmake6 qt6-svg-dev
                  libqcustomplot-dev libqcustomplot2.1-qt6 libsqlite3-dev libgl-dev libglx-dev libopengl-dev
                  libegl-dev qt6-l10n-tools)
  # Documentation, private headers, the other platform plugins (xcb, eglfs, ...) and the static SQLite stay out.
  dpkg -L "${packages[@]}" | sort -u | while read -r f; do
    [[ -f $f || -L $f ]] || continue
    case $f in
      /usr/share/*|*/private/*|*/qt6/plugins/platforms/*|*/qt6/plugins/egldeviceintegrations/*) continue ;;
      */qt6/plugins/xcbglintegrations/*|*/qt6/plugins/platformthemes/*|*/libsqlite3.a|*/libsqlite3.la) continue ;;
      */libQt6XcbQpa.so*|*/libQt6EglFs*|*/libQt6OpenGL.so*|*/cmake/QCustomPlot/*|*/libQCustomPlot.so) continue ;;
    esac
    mkdir -p "$root$(dirname "$f")" && cp -a "$f" "$root$f"
  done
  # A development link whose library came from a package left out (libGL.so) becomes the library itself.
  local link
  find "$root" -type l | while read -r link; do
    [[ -e $link ]] || cp -L --remove-destination "$(readlink -f "${link#"$root"}")" "$link"
  done
  # lrelease compiles the translations; Linguist's CMake package is in qt6-tools-dev, whose other files (the
  # Designer's headers) the window does not need. lupdate is carried for that package's sake but cannot run
  # there (it needs libclang, 180 MB): the translations' own test stays on the CPU machines.
  cp -a "/usr/lib/$multiarch/cmake/Qt6LinguistTools" "$root/usr/lib/$multiarch/cmake/"
  local plugins=/usr/lib/$multiarch/qt6/plugins
  mkdir -p "$root$plugins/platforms" && cp -a "$plugins/platforms/libqoffscreen.so" "$root$plugins/platforms/"
  # CMake refuses an imported target whose file is absent. Plugins are found by a glob over their package
  # files, so a plugin left out loses its package files; any other file a target names (qmake) is carried.
  local targets file plugin
  for targets in "$root/usr/lib/$multiarch"/cmake/*/*Targets-*.cmake; do
    [[ -f $targets ]] || continue
    for file in $(grep -ho '"${_IMPORT_PREFIX}[^"]*"' "$targets" | sed 's|"${_IMPORT_PREFIX}|/usr|; s|"$||'); do
      [[ -e $root$file ]] && continue
      if [[ $targets == *PluginTargets-* ]]; then
        plugin=${targets%Targets-*}
        rm -f "$plugin"*.cmake
      elif [[ -e $file ]]; then
        mkdir -p "$root$(dirname "$file")" && cp -a "$file" "$root$file"
      fi
    done
  done
  # Every shared library the toolkit needs, except the C and C++ runtimes, which the GPU machine has in newer
  # versions (ldd fails on the scripts among the tools: those have nothing to add).
  { find "$root" -type f \( -name '*.so*' -o -path '*/libexec/*' -o -name lrelease \) -print0 |
      xargs -0 ldd 2>/dev/null || true; } |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libresolv|libstdc\+\+|libgcc_s|libgomp|ld-linux-x86-64)\.so' |
    while read -r lib; do
      [[ -e $root/usr/lib/$multiarch/$(basename "$lib") ]] || cp -L "$lib" "$root/runtime/"
    done
  cp -L /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf \
    /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf "$root/fonts/"
  echo "$multiarch" > "$root/MULTIARCH"
  mkdir -p "$(dirname "$ARCHIVE")"
  XZ_OPT=-T0 tar -C "$stage" -cJf "$ARCHIVE" qt6-window
  rm -rf "$stage"
  ls -l "$ARCHIVE"
}

qt_carry_use() {
  QT_CARRY_DIR=${QT_CARRY_DIR:-/tmp/qt6-window}
  [[ -f $ARCHIVE ]] || { echo "no $ARCHIVE: run bench/gpu/qt_carry.sh pack on a Debian 12 machine and carry it"; return 1; }
  rm -rf "$QT_CARRY_DIR" && mkdir -p "$QT_CARRY_DIR"
  tar -C "$QT_CARRY_DIR" --strip-components=1 -xJf "$ARCHIVE" || return 1
  local multiarch lib name
  multiarch=$(cat "$QT_CARRY_DIR/MULTIARCH")
  mkdir -p "$QT_CARRY_DIR/missing"
  ldconfig -p | awk 'NR > 1 {print $1}' | sort -u > "$QT_CARRY_DIR/system-sonames"
  for lib in "$QT_CARRY_DIR"/runtime/*; do
    name=$(basename "$lib")
    grep -qxF "$name" "$QT_CARRY_DIR/system-sonames" || ln -sf "$lib" "$QT_CARRY_DIR/missing/$name"
  done
  echo "libraries the machine lacked, taken from the archive: $(ls "$QT_CARRY_DIR/missing" | tr '\n' ' ')"
  export LD_LIBRARY_PATH="$QT_CARRY_DIR/usr/lib/$multiarch:$QT_CARRY_DIR/missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export QT_PLUGIN_PATH="$QT_CARRY_DIR/usr/lib/$multiarch/qt6/plugins"
  export QT_QPA_PLATFORM=offscreen
  # The machine may have no fontconfig setup at all: one that knows only the carried fonts.
  cat > "$QT_CARRY_DIR/fonts.conf" <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>$QT_CARRY_DIR/fonts</dir><cachedir>$QT_CARRY_DIR/fontcache</cachedir></fontconfig>
EOF
  export FONTCONFIG_FILE="$QT_CARRY_DIR/fonts.conf"
  # For CMake: the prefix of the carried packages, and SQLite's header with the machine's own runtime library.
  local sqlite
  sqlite=$(ldconfig -p | awk '/libsqlite3\.so\.0 / {print $NF; exit}')
  QT_CARRY_CMAKE_ARGS="-DFORJA_BUILD_UI=ON -DSQLite3_INCLUDE_DIR=$QT_CARRY_DIR/usr/include"
  QT_CARRY_CMAKE_ARGS+=" -DSQLite3_LIBRARY=${sqlite:-$QT_CARRY_DIR/usr/lib/$multiarch/libsqlite3.so}"
  QT_CARRY_PREFIX="$QT_CARRY_DIR/usr"
}

case ${1:-} in
  pack) qt_carry_pack ;;
  use) qt_carry_use ;;
  *) echo "usage: bash bench/gpu/qt_carry.sh pack | source bench/gpu/qt_carry.sh use" >&2 ;;
esac
