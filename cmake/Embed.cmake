# nnxr_embed(TARGET SYMBOL FILE): compiles FILE into TARGET as
#   extern const unsigned char SYMBOL[]; extern const std::size_t SYMBOL_size;
# (namespace nnxr::embedded). The source is regenerated when FILE changes.
set(NNXR_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed-file.cmake)

function(nnxr_embed target symbol file)
  get_filename_component(file ${file} ABSOLUTE)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/embedded/${symbol}.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DSYMBOL=${symbol} -P ${NNXR_EMBED_SCRIPT}
    DEPENDS ${file} ${NNXR_EMBED_SCRIPT}
    COMMENT "Embedding ${symbol}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
