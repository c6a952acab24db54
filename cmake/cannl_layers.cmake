# Helpers that keep the per-layer build uniform: a layer is every .cpp under src/<layer>/, its
# tests every .cpp under tests/<layer>/ (one executable per layer keeps CI link time small).
#
# The layering is enforced by the compiler, not by review: no target gets include/ as a whole.
# Each layer has a folder in the build tree, layer_include/<layer>/cannl/<layer>, a link to its
# public headers include/cannl/<layer>, which it hands to the targets linking it, and a folder
# layer_src/<layer>/<layer> linking src/<layer> for its own private headers. A layer's sources
# therefore see exactly its own headers and the public headers of the layers it depends on,
# directly or through them (CMake propagates the folders with the link dependencies), and an
# include of any other layer's header does not compile. scripts/check_layering.py checks the same
# order by grep, for a quick answer without a build.

# cannl_layer(<name> [DEPS <layer>...] [LIBS <library>...] [HEADERS <file>...]): the static
# library cannl_<name>. DEPS are layer names (without cannl_), LIBS other libraries the layer
# links publicly, HEADERS public headers directly under include/cannl/ that belong to the layer
# (the umbrella cannl.h belongs to the top layer).
function(cannl_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS;LIBS;HEADERS" ${ARGN})
  set(public_root ${CMAKE_BINARY_DIR}/layer_include/${name})
  set(private_root ${CMAKE_BINARY_DIR}/layer_src/${name})
  file(MAKE_DIRECTORY ${public_root}/cannl ${private_root})
  cannl_link(${PROJECT_SOURCE_DIR}/include/cannl/${name} ${public_root}/cannl/${name})
  cannl_link(${PROJECT_SOURCE_DIR}/src/${name} ${private_root}/${name})
  foreach(header ${ARG_HEADERS})
    cannl_link(${PROJECT_SOURCE_DIR}/include/cannl/${header} ${public_root}/cannl/${header})
  endforeach()

  set(deps)
  foreach(dep ${ARG_DEPS})
    if(NOT TARGET cannl_${dep})
      message(FATAL_ERROR "layer ${name} depends on ${dep}, which is not declared before it")
    endif()
    list(APPEND deps cannl_${dep})
  endforeach()

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(sources)
    add_library(cannl_${name} STATIC ${sources})
    target_compile_options(cannl_${name} PRIVATE ${CANNL_PRODUCT_COMPILE_OPTIONS})
    target_include_directories(cannl_${name} PUBLIC ${public_root} PRIVATE ${private_root})
    target_link_libraries(cannl_${name} PUBLIC ${deps} ${ARG_LIBS})
    set_target_properties(cannl_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  else()
    add_library(cannl_${name} INTERFACE)
    target_include_directories(cannl_${name} INTERFACE ${public_root})
    target_link_libraries(cannl_${name} INTERFACE ${deps} ${ARG_LIBS})
  endif()
endfunction()

# A symbolic link `link` to the file or folder `target` (replaced when it points elsewhere).
function(cannl_link target link)
  if(IS_SYMLINK ${link})
    file(READ_SYMLINK ${link} current)
    if(current STREQUAL target)
      return()
    endif()
    file(REMOVE ${link})
  endif()
  file(CREATE_LINK ${target} ${link} SYMBOLIC)
endfunction()

# cannl_layer_tests(<name> [LAYERS <layer>...]): the executable test_<name> from tests/<name>/,
# linking cannl_<name> (and so the layers below it) plus LAYERS, the layers above it that these
# tests use as a harness (running a routine on a backend, building a model); a test that needs
# another layer must name it here. Test helpers under tests/ are visible to every test, private
# headers only those of the tested layer.
function(cannl_layer_tests name)
  cmake_parse_arguments(ARG "" "" "LAYERS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${name}/*.cpp)
  if(NOT sources)
    return()
  endif()
  add_executable(test_${name} ${sources})
  set(layers cannl_${name})
  foreach(layer ${ARG_LAYERS})
    list(APPEND layers cannl_${layer})
  endforeach()
  target_include_directories(test_${name} PRIVATE ${CMAKE_BINARY_DIR}/layer_src/${name} ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_${name} PRIVATE ${layers} GTest::gtest GTest::gtest_main)
  cannl_test_optimization(test_${name})
  cannl_test_precompiled_headers(test_${name})
  # Tests run in their own scratch directory so build_files/ and config files never leak between runs.
  set(workdir ${CMAKE_BINARY_DIR}/test_work/${name})
  file(MAKE_DIRECTORY ${workdir})
  target_compile_definitions(test_${name} PRIVATE
    CANNL_TEST_BINARY_DIR="${CMAKE_BINARY_DIR}" CANNL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(test_${name} WORKING_DIRECTORY ${workdir} DISCOVERY_MODE PRE_TEST
    PROPERTIES TIMEOUT 600)
endfunction()

# cannl_test_optimization(<target>): a test executable's own sources compile at -Og in optimized
# builds. The work a test checks runs in the layers' libraries, compiled as the build type says;
# the test bodies (gtest's macros, many small fixtures) cost about twice as long at -O2 for no
# speed a test run notices, and they are most of what a clean build compiles.
function(cannl_test_optimization target)
  if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release|MinSizeRel)$")
    target_compile_options(${target} PRIVATE -Og)
  endif()
endfunction()

# cannl_test_precompiled_headers(<target>): the test executable compiles with the system headers of
# tests/precompiled_test_headers.h precompiled (about 1.5 s less per test file, a fifth of its
# compile). One object library, cannl_test_pch, precompiles the header; every test executable
# reuses it, so a build precompiles it once, and no test executable waits for another to link
# (a reusing target depends on the one it reuses from). ccache caches objects built with a
# precompiled header only when told that the header's macros and time macros need not be hashed
# (its manual, "Precompiled headers"): the test targets' launcher says so.
# CANNL_TEST_PCH=OFF builds the tests without it.
option(CANNL_TEST_PCH "Precompile the system headers the test executables include" ON)
function(cannl_test_precompiled_headers target)
  if(NOT CANNL_TEST_PCH)
    return()
  endif()
  if(NOT TARGET cannl_test_pch)
    add_library(cannl_test_pch OBJECT ${PROJECT_SOURCE_DIR}/tests/precompiled_test_headers.cpp)
    target_link_libraries(cannl_test_pch PRIVATE GTest::gtest)
    cannl_test_optimization(cannl_test_pch)
    target_precompile_headers(cannl_test_pch PRIVATE ${PROJECT_SOURCE_DIR}/tests/precompiled_test_headers.h)
    # Clang stamps a precompiled header with its build time unless told not to, and ccache then
    # never reuses what was compiled with it (its manual, "Precompiled headers").
    if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      target_compile_options(cannl_test_pch PRIVATE -Xclang -fno-pch-timestamp)
    endif()
    cannl_test_ccache_for_pch(cannl_test_pch)
  endif()
  target_precompile_headers(${target} REUSE_FROM cannl_test_pch)
  cannl_test_ccache_for_pch(${target})
endfunction()

function(cannl_test_ccache_for_pch target)
  if(CCACHE_PROGRAM)
    set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER
      "${CMAKE_COMMAND};-E;env;CCACHE_SLOPPINESS=pch_defines,time_macros;${CCACHE_PROGRAM}")
  endif()
endfunction()
