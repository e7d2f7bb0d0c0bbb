# Run by ctest when it starts (a TEST_INCLUDE_FILES entry that tests/kiln_test.cmake writes per
# suite): asks the suite's doctest executable for its test cases and adds one test per case,
# selected by its position (--first=i --last=i: doctest lists and runs them in the same order, and
# positions need none of the escaping a name with commas or wildcards would). The listing is
# walked line by line with string(FIND), never as a CMake list, which brackets and semicolons in
# a name would split wrongly. A suite that cannot list its cases (not built, or failing at start)
# gets one test that runs it plainly, so that the failure shows.
execute_process(COMMAND "${kiln_suite_exe}" --list-test-cases
                WORKING_DIRECTORY "${kiln_suite_dir}"
                OUTPUT_VARIABLE kiln_listing RESULT_VARIABLE kiln_listed ERROR_QUIET)
if(NOT kiln_listed EQUAL 0)
  set(kiln_listing "")
endif()
set(kiln_index 0)
set(kiln_names "\n")
while(NOT kiln_listing STREQUAL "")
  string(FIND "${kiln_listing}" "\n" kiln_end)
  if(kiln_end EQUAL -1)
    set(kiln_line "${kiln_listing}")
    set(kiln_listing "")
  else()
    string(SUBSTRING "${kiln_listing}" 0 ${kiln_end} kiln_line)
    math(EXPR kiln_end "${kiln_end} + 1")
    string(SUBSTRING "${kiln_listing}" ${kiln_end} -1 kiln_listing)
  endif()
  if(kiln_line STREQUAL "" OR kiln_line MATCHES "^\\[doctest\\]" OR kiln_line MATCHES "^===")
    continue()
  endif()
  math(EXPR kiln_index "${kiln_index} + 1")
  string(FIND "${kiln_line}" "${kiln_suite}: " kiln_prefixed)
  if(kiln_prefixed EQUAL 0)  # "codegen: ..." stays as it is
    set(kiln_name "${kiln_line}")
  else()
    set(kiln_name "${kiln_suite}: ${kiln_line}")
  endif()
  string(REPLACE ";" "," kiln_name "${kiln_name}")
  string(FIND "${kiln_names}" "\n${kiln_name}\n" kiln_seen)
  if(NOT kiln_seen EQUAL -1)  # doctest allows a name twice, ctest does not
    set(kiln_name "${kiln_name} (#${kiln_index})")
  endif()
  string(APPEND kiln_names "${kiln_name}\n")
  set(kiln_cost ${kiln_suite_cost})
  if(NOT kiln_suite_long STREQUAL "" AND kiln_line MATCHES "${kiln_suite_long}")
    # A long case (a sweep of tests/support/runtime_sweep.h) runs as two tests, each the half of
    # its programs KILN_SWEEP_SHARD gives it: on two cores its minutes then no longer end the
    # suite alone.
    math(EXPR kiln_cost "${kiln_cost} + 10")
    foreach(kiln_shard 0 1)
      set(kiln_env ${kiln_suite_environment} "KILN_SWEEP_SHARD=${kiln_shard}/2")
      math(EXPR kiln_part "${kiln_shard} + 1")
      add_test("${kiln_name} [part ${kiln_part} of 2]" "${kiln_suite_exe}" --first=${kiln_index}
               --last=${kiln_index} --no-intro=true --duration=false)
      set_tests_properties("${kiln_name} [part ${kiln_part} of 2]" PROPERTIES
                           LABELS "${kiln_suite_label}" COST "${kiln_cost}"
                           WORKING_DIRECTORY "${kiln_suite_dir}" ENVIRONMENT "${kiln_env}")
    endforeach()
    continue()
  endif()
  add_test("${kiln_name}" "${kiln_suite_exe}" --first=${kiln_index} --last=${kiln_index}
           --no-intro=true --duration=false)
  set_tests_properties("${kiln_name}" PROPERTIES LABELS "${kiln_suite_label}"
                       COST "${kiln_cost}" WORKING_DIRECTORY "${kiln_suite_dir}"
                       ENVIRONMENT "${kiln_suite_environment}")
endwhile()
if(kiln_index EQUAL 0)
  add_test("${kiln_suite}" "${kiln_suite_exe}" --no-intro=true)
  set_tests_properties("${kiln_suite}" PROPERTIES LABELS "${kiln_suite_label}"
                       WORKING_DIRECTORY "${kiln_suite_dir}"
                       ENVIRONMENT "${kiln_suite_environment}")
endif()
