# TOPOTRAIN_SANITIZE instruments the host code of every target. It is a list: "address",
# "undefined", "thread", or "address;undefined" (the build tests/sanitize/asan.sh and tests/fuzz/run.sh
# share). TOPOTRAIN_FUZZ adds the libFuzzer targets (tests/fuzz, clang only): the libraries get
# coverage instrumentation (-fsanitize=fuzzer-no-link) and each target links libFuzzer's main.
option(TOPOTRAIN_FUZZ "Build the libFuzzer targets in tests/fuzz (clang; use with TOPOTRAIN_SANITIZE)" OFF)

set(tt_sanitizers ${TOPOTRAIN_SANITIZE})
foreach(san ${tt_sanitizers})
  if(NOT san MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "TOPOTRAIN_SANITIZE must be a list of address, undefined, thread (got '${TOPOTRAIN_SANITIZE}')")
  endif()
endforeach()
if("thread" IN_LIST tt_sanitizers AND "address" IN_LIST tt_sanitizers)
  message(FATAL_ERROR "TOPOTRAIN_SANITIZE: thread and address cannot be combined (separate builds)")
endif()
if(TOPOTRAIN_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "TOPOTRAIN_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++")
endif()

if(tt_sanitizers)
  string(REPLACE ";" "," tt_sanitize_flag "${tt_sanitizers}")
  set(tt_san_compile -fsanitize=${tt_sanitize_flag} -fno-omit-frame-pointer)
  set(tt_san_link -fsanitize=${tt_sanitize_flag})
  if("undefined" IN_LIST tt_sanitizers)
    # Every UBSan report ends the process (not only when UBSAN_OPTIONS says halt_on_error), so a
    # test or a fuzzer cannot pass over undefined behaviour.
    list(APPEND tt_san_compile -fno-sanitize-recover=undefined)
  endif()
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # clang links its sanitizer runtimes statically into executables by default, which leaves the
    # layer libraries (linked with --no-undefined) with unresolved __asan_/__ubsan_ symbols; the
    # shared runtime resolves them, and the rpath finds it at run time. (GCC links libasan.so anyway.)
    list(APPEND tt_san_link -shared-libsan)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-resource-dir OUTPUT_VARIABLE tt_clang_resource_dir
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND tt_san_link "-Wl,-rpath,${tt_clang_resource_dir}/lib/linux")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${tt_san_compile}>")
  add_link_options(${tt_san_link})
endif()

if(TOPOTRAIN_FUZZ)
  # Coverage for libFuzzer in every library; the fuzz targets add -fsanitize=fuzzer (tests/fuzz).
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
