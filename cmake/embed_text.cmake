# Writes OUTPUT, a C++ file defining `const char NAMESPACE::SYMBOL[]` as the text of INPUT (NAME:
# its path for the comment). Run by cannl_embed_text (cannl_embed.cmake).
file(READ ${INPUT} text)
set(delimiter "cannl_text")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${NAME} contains )${delimiter}\" and cannot be embedded as a raw string")
endif()
file(WRITE ${OUTPUT}.tmp
  "// Generated from ${NAME} by cmake/embed_text.cmake: edit that file, not this one.\n"
  "namespace ${NAMESPACE} {\n\n"
  "extern const char ${SYMBOL}[];\n"
  "const char ${SYMBOL}[] = R\"${delimiter}(${text})${delimiter}\";\n\n"
  "}  // namespace ${NAMESPACE}\n")
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
