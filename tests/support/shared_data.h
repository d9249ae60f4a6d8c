// Locating ../shared (the read-only test data every developer and CI has) and the build tree.
// Under CI (CI=true) missing shared data is a test failure, never a silent skip.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace lemma::testing {

// $LEMMA_SHARED if set, else <source dir>/../shared.
std::filesystem::path shared_dir();
// shared_dir()/data/<relative>.
std::filesystem::path shared_data(const std::string& relative);
// A scratch folder under the build tree for generated files (created on demand).
std::filesystem::path build_scratch(const std::string& name);
bool running_in_ci();
std::string read_file(const std::filesystem::path& path);

}  // namespace lemma::testing

// Skips the test (or fails it under CI) when `path` does not exist.
#define LEMMA_REQUIRE_SHARED(path)                                                   \
  do {                                                                               \
    if (!std::filesystem::exists(path)) {                                            \
      if (::lemma::testing::running_in_ci()) {                                       \
        FAIL() << "missing shared test data: " << (path);                            \
      } else {                                                                       \
        GTEST_SKIP() << "missing shared test data: " << (path);                      \
      }                                                                              \
    }                                                                                \
  } while (0)
