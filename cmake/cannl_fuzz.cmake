# libFuzzer targets: every tests/fuzz/<name>_fuzz.cpp defines LLVMFuzzerTestOneInput and becomes
# the executable fuzz_<name> when configured with clang and -DCANNL_FUZZ=ON. Seeds for a target go
# in tests/fuzz/corpus/<name>/. Run: build-fuzz/fuzz_<name> -max_total_time=60 tests/fuzz/corpus/<name>
#
# Each harness links only the code it feeds (cannl_fuzz_links below), not the whole library: the
# instrumented build is a third compile of the sources in CI (after the plain and the sanitized
# ones), and the parsers under test are a few dozen of its files.
option(CANNL_FUZZ "Build the libFuzzer targets (needs clang)" OFF)
if(CANNL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CANNL_FUZZ needs clang (configure with CC=clang CXX=clang++)")
  endif()
  # The safetensors reader and what it parses with, out of the io layer (which as a whole sits on
  # top of the tensor layer and so of nearly everything).
  add_library(cannl_fuzz_safetensors STATIC
    ${PROJECT_SOURCE_DIR}/src/io/safetensors_reader.cpp ${PROJECT_SOURCE_DIR}/src/io/safetensors_header.cpp
    ${PROJECT_SOURCE_DIR}/src/io/safetensors_dtype.cpp ${PROJECT_SOURCE_DIR}/src/io/json.cpp
    ${PROJECT_SOURCE_DIR}/src/io/mapped_file.cpp ${PROJECT_SOURCE_DIR}/src/io/tensor_index.cpp)
  target_include_directories(cannl_fuzz_safetensors PUBLIC ${CMAKE_BINARY_DIR}/layer_include/io
                             PRIVATE ${CMAKE_BINARY_DIR}/layer_src/io)
  target_link_libraries(cannl_fuzz_safetensors PUBLIC cannl_ir)
  set(cannl_fuzz_links_einsum_parser cannl_shape)
  set(cannl_fuzz_links_safetensors cannl_fuzz_safetensors)

  file(GLOB fuzz_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/*_fuzz.cpp)
  foreach(src ${fuzz_sources})
    get_filename_component(stem ${src} NAME_WE)
    string(REGEX REPLACE "_fuzz$" "" name ${stem})
    if(NOT DEFINED cannl_fuzz_links_${name})
      message(FATAL_ERROR "tests/fuzz/${stem}.cpp: say what it links in cmake/cannl_fuzz.cmake (cannl_fuzz_links_${name})")
    endif()
    add_executable(fuzz_${name} ${src})
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${name} PRIVATE ${cannl_fuzz_links_${name}})
  endforeach()
endif()
