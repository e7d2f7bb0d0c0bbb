# kiln_test_suite(FOLDER LABEL LIBS...): one doctest executable from tests/FOLDER/*.cpp plus the
# shared main and helpers, registered with CTest under LABEL. Tests run from the source root so
# that paths like ops/nn.toml resolve.
function(kiln_test_suite folder label)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${folder}/*.cpp)
  if(NOT sources)
    return()
  endif()
  set(target kiln_${folder}_tests)
  add_executable(${target} ${PROJECT_SOURCE_DIR}/tests/support/main.cpp
                           ${PROJECT_SOURCE_DIR}/tests/support/harness.cpp ${sources})
  target_link_libraries(${target} PRIVATE ${ARGN} doctest::doctest)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  add_test(NAME ${folder} COMMAND ${target} --no-intro=true --duration=false
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${folder} PROPERTIES LABELS ${label}
                       ENVIRONMENT "KILN_BIN=$<TARGET_FILE:kiln>")
endfunction()
