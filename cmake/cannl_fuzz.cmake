# libFuzzer targets: every tests/fuzz/<name>_fuzz.cpp defines LLVMFuzzerTestOneInput and becomes
# the executable fuzz_<name> when configured with clang and -DCANNL_FUZZ=ON. Seeds for a target go
# in tests/fuzz/corpus/<name>/. Run: build-fuzz/fuzz_<name> -max_total_time=60 tests/fuzz/corpus/<name>
option(CANNL_FUZZ "Build the libFuzzer targets (needs clang)" OFF)
if(CANNL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CANNL_FUZZ needs clang (configure with CC=clang CXX=clang++)")
  endif()
  file(GLOB fuzz_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/*_fuzz.cpp)
  foreach(src ${fuzz_sources})
    get_filename_component(stem ${src} NAME_WE)
    string(REGEX REPLACE "_fuzz$" "" name ${stem})
    add_executable(fuzz_${name} ${src})
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${name} PRIVATE cannl)
  endforeach()
endif()
