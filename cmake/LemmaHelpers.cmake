# lemma_library(<name> SOURCES ... DEPS ...): one static library per concept folder.
# Targets are named lemma_<name>; headers are included as "lemma/<name>/...".
function(lemma_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(lemma_${name} STATIC ${ARG_SOURCES})
  target_include_directories(lemma_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(lemma_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
endfunction()

# lemma_test(<name> SOURCES ... DEPS ... [LABELS ...]): a GoogleTest executable registered with CTest.
function(lemma_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} lemma_test_support GTest::gtest GTest::gtest_main)
  # Test sources are glue around the libraries (which keep -O3): at -O1 they compile about a third
  # faster, and the build is most of the CI run.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:-O1>)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(properties TIMEOUT ${ARG_TIMEOUT})
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
endfunction()
