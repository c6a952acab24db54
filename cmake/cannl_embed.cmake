# Text files compiled into a layer as C++ constants, so that an installed cannl needs no source
# tree: cannl_embed_text(<target> <file relative to the source root> <symbol>) defines
# `const char cannl::codegen::kernel_texts::<symbol>[]` holding the file, regenerated whenever it
# changes (cmake/embed_text.cmake writes the .cpp).
function(cannl_embed_text target file symbol)
  set(out ${CMAKE_BINARY_DIR}/generated/embedded/${symbol}.cpp)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${PROJECT_SOURCE_DIR}/${file} -DNAME=${file} -DOUTPUT=${out}
            -DSYMBOL=${symbol} -P ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${PROJECT_SOURCE_DIR}/${file} ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "Embedding ${file}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
