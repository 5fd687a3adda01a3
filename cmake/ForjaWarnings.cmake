# forja_set_warnings(<target>): the project's warning flags, for our own code only (third-party headers are SYSTEM).
function(forja_set_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>)
  if(FORJA_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
option(FORJA_WERROR "Treat warnings in Forja's own code as errors" OFF)
