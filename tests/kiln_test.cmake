# kiln_test_code(TARGET): under KILN_SANITIZE, the test code itself is compiled without the
# sanitizers (Kiln's libraries and the kiln tool it tests keep them; the executable still links
# their runtimes), which took 44 % of the sanitizer build's compile time, and defines
# KILN_SANITIZED, by which tests skip what the sanitizers would not see (docs/testing.md).
function(kiln_test_code target)
  if(KILN_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_compile_definitions(${target} PRIVATE KILN_SANITIZED=1)
  endif()
endfunction()

# kiln_test_suite(FOLDER LABEL LIBS... [ENVIRONMENT VAR=VALUE...] [COST N] [LONG REGEX]): one doctest
# executable from tests/FOLDER/*.cpp plus the shared main and helpers. Each of its test cases is a
# CTest test of its own, labelled LABEL and named "FOLDER: <test case>", or the case's name where
# it starts so (tests/test_cases.cmake lists them when ctest starts), so that `ctest -j` spreads a
# long suite over the cores; tests of a higher COST start first (the long suites: none is left to
# run alone at the end), and within a suite the cases whose names match LONG (minutes each) start
# before the others (ten more). Tests run from the source root so that paths like ops/nn.toml resolve;
# KILN_BIN names the kiln executable. The shared main and helpers (tests/support/) compile once,
# into kiln_test_support, for every suite.
function(kiln_test_suite folder label)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "COST;LONG" "ENVIRONMENT")
  if(NOT arg_COST)
    set(arg_COST 0)
  endif()
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${folder}/*.cpp)
  if(NOT sources)
    return()
  endif()
  set(target kiln_${folder}_tests)
  add_executable(${target} ${sources})
  target_link_libraries(${target} PRIVATE kiln_test_support ${arg_UNPARSED_ARGUMENTS}
                        doctest::doctest)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  kiln_test_code(${target})
  set(environment "KILN_BIN=$<TARGET_FILE:kiln>" ${arg_ENVIRONMENT})
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_cases.cmake)
  file(GENERATE OUTPUT ${include_file} CONTENT
       "set(kiln_suite [==[${folder}]==])
set(kiln_suite_exe [==[$<TARGET_FILE:${target}>]==])
set(kiln_suite_label [==[${label}]==])
set(kiln_suite_dir [==[${PROJECT_SOURCE_DIR}]==])
set(kiln_suite_environment [==[${environment}]==])
set(kiln_suite_cost ${arg_COST})
set(kiln_suite_long [==[${arg_LONG}]==])
include([==[${PROJECT_SOURCE_DIR}/tests/test_cases.cmake]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
