# Text files compiled into a layer as C++ constants, so that an installed cannl needs no source
# tree: cannl_embed_text(<target> <file relative to the source root> <symbol> [NAMESPACE <ns>])
# defines `const char <ns>::<symbol>[]` holding the file (the namespace defaults to
# cannl::codegen::kernel_texts), regenerated whenever it changes (cmake/embed_text.cmake writes
# the .cpp). The layer declares the symbol in a header of its own.
function(cannl_embed_text target file symbol)
  cmake_parse_arguments(ARG "" "NAMESPACE" "" ${ARGN})
  if(NOT ARG_NAMESPACE)
    set(ARG_NAMESPACE cannl::codegen::kernel_texts)
  endif()
  set(out ${CMAKE_BINARY_DIR}/generated/embedded/${symbol}.cpp)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${PROJECT_SOURCE_DIR}/${file} -DNAME=${file} -DOUTPUT=${out}
            -DSYMBOL=${symbol} -DNAMESPACE=${ARG_NAMESPACE} -P ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${PROJECT_SOURCE_DIR}/${file} ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "Embedding ${file}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
