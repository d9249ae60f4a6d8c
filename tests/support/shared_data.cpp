#include "support/shared_data.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lemma::testing {

std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("LEMMA_SHARED"); env && *env) return env;
  return std::filesystem::path(LEMMA_SOURCE_DIR) / ".." / "shared";
}

std::filesystem::path shared_data(const std::string& relative) { return shared_dir() / "data" / relative; }

std::filesystem::path build_scratch(const std::string& name) {
  auto dir = std::filesystem::path(LEMMA_BUILD_DIR) / "test-scratch" / name;
  std::filesystem::create_directories(dir);
  return dir;
}

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace lemma::testing
