# mplan_embed_files(<target> <namespace-fn> FILES a b ...): generates a .cpp that holds the listed
# files (paths relative to the source dir) as string literals, so preset data ships inside the binary.
# The list is explicit (no globbing); editing a listed file re-runs the generation.
function(mplan_embed_files target fn)
  cmake_parse_arguments(E "" "" "FILES" ${ARGN})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${fn}.cpp")
  set(script "${PROJECT_SOURCE_DIR}/cmake/embed_gen.cmake")
  set(abs "")
  foreach(f IN LISTS E_FILES)
    list(APPEND abs "${PROJECT_SOURCE_DIR}/${f}")
  endforeach()
  string(REPLACE ";" "|" files_arg "${E_FILES}")
  add_custom_command(OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DFN=${fn} -DROOT=${PROJECT_SOURCE_DIR} "-DFILES=${files_arg}" -P ${script}
    DEPENDS ${abs} ${script}
    COMMENT "Embedding ${fn} data files" VERBATIM)
  target_sources(${target} PRIVATE "${out}")
endfunction()
