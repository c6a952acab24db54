# `cmake --install <build> --prefix <dir>`: the `cannl` program (bin/), the layer libraries and
# public headers (lib/, include/cannl/), the GPT-2 tokenizer data (share/cannl/gpt2-bpe, where an
# installed `cannl gpt2 --prompt` looks first) and a CMake package, so that another project
# builds against cannl with
#
#   find_package(cannl REQUIRED)
#   target_link_libraries(app PRIVATE cannl::cannl)
#
# Included once, after every layer and the app are defined. The libraries are found by walking
# the link closure of the `cannl` target, so a new layer is installed without editing this file.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every cannl_* target reachable from `target` through its link libraries, into `out_var`.
function(cannl_link_closure target out_var)
  set(seen ${${out_var}})
  set(pending ${target})
  while(pending)
    list(POP_FRONT pending current)
    if(NOT TARGET ${current} OR current IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${current})
    get_target_property(type ${current} TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct ${current} LINK_LIBRARIES)
      if(direct)
        list(APPEND links ${direct})
      endif()
    endif()
    get_target_property(interface ${current} INTERFACE_LINK_LIBRARIES)
    if(interface)
      list(APPEND links ${interface})
    endif()
    foreach(link ${links})
      if(link MATCHES "^cannl")
        list(APPEND pending ${link})
      endif()
    endforeach()
  endwhile()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

set(cannl_installed_libraries "")
cannl_link_closure(cannl cannl_installed_libraries)

# In the build tree a layer exports only its own public headers (its folder under layer_include/,
# so an upward include fails to compile: cmake/cannl_layers.cmake); an installed layer names the
# installed include/ instead.
foreach(library ${cannl_installed_libraries})
  get_target_property(build_dirs ${library} INTERFACE_INCLUDE_DIRECTORIES)
  set(dirs "")
  if(build_dirs)
    foreach(dir ${build_dirs})
      list(APPEND dirs "$<BUILD_INTERFACE:${dir}>")
    endforeach()
  endif()
  list(APPEND dirs "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${library} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
endforeach()

install(TARGETS ${cannl_installed_libraries} EXPORT cannlTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS cannl_app RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cannl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/gpt2-bpe DESTINATION ${CMAKE_INSTALL_DATADIR}/cannl)

set(cannl_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cannl)
install(EXPORT cannlTargets NAMESPACE cannl:: DESTINATION ${cannl_package_dir})
file(WRITE ${CMAKE_BINARY_DIR}/cannl_package/cannlConfig.cmake.in [=[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/cannlTargets.cmake")
check_required_components(cannl)
]=])
configure_package_config_file(${CMAKE_BINARY_DIR}/cannl_package/cannlConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cannl_package/cannlConfig.cmake INSTALL_DESTINATION ${cannl_package_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cannl_package/cannlConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cannl_package/cannlConfig.cmake
  ${CMAKE_BINARY_DIR}/cannl_package/cannlConfigVersion.cmake DESTINATION ${cannl_package_dir})

# A sanitized build installs instrumented libraries that a plain consumer cannot link, so the
# package is tested by the plain build only.
if(CANNL_BUILD_TESTS AND NOT CANNL_SANITIZE)
  # Installs into a scratch prefix, builds tests/install/consumer against find_package(cannl),
  # runs it, and runs the installed `cannl gpt2` from another directory.
  add_test(NAME install_and_consume
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/install/install_test.sh ${CMAKE_BINARY_DIR}
            ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}/test_work/install)
  set_tests_properties(install_and_consume PROPERTIES TIMEOUT 900)
endif()
