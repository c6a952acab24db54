# Helpers that keep the per-layer build uniform: a layer is every .cpp under src/<layer>/, its
# tests every .cpp under tests/<layer>/ (one executable per layer keeps CI link time small).

function(cannl_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(sources)
    add_library(cannl_${name} STATIC ${sources})
    target_include_directories(cannl_${name}
      PUBLIC ${PROJECT_SOURCE_DIR}/include
      PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(cannl_${name} PUBLIC ${ARG_DEPS})
    set_target_properties(cannl_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  else()
    add_library(cannl_${name} INTERFACE)
    target_include_directories(cannl_${name} INTERFACE ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(cannl_${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

function(cannl_layer_tests name)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${name}/*.cpp)
  if(NOT sources)
    return()
  endif()
  add_executable(test_${name} ${sources})
  target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_${name} PRIVATE cannl GTest::gtest GTest::gtest_main)
  # Tests run in their own scratch directory so build_files/ and config files never leak between runs.
  set(workdir ${CMAKE_BINARY_DIR}/test_work/${name})
  file(MAKE_DIRECTORY ${workdir})
  target_compile_definitions(test_${name} PRIVATE
    CANNL_TEST_BINARY_DIR="${CMAKE_BINARY_DIR}" CANNL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(test_${name} WORKING_DIRECTORY ${workdir} DISCOVERY_MODE PRE_TEST
    PROPERTIES TIMEOUT 600)
endfunction()
