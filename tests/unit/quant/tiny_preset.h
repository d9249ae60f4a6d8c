// The tiny-256 preset (seed 0, f32) regenerated under the build tree by
// shared/tools/make_bench_model.py, once per build tree (safe against concurrent tests).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "support/shared_data.h"

namespace lemma::quant {

// The folder holding tiny-256-f32.gguf and hf/; nullopt (with `why`) when it cannot be generated.
inline std::optional<std::filesystem::path> ensure_tiny_256(std::string& why) {
  namespace fs = std::filesystem;
  const fs::path dir = lemma::testing::build_scratch("quant") / "tiny-256";
  if (fs::exists(dir / "complete")) return dir;
  const auto tool = lemma::testing::shared_dir() / "tools" / "make_bench_model.py";
  const fs::path tmp = lemma::testing::build_scratch("quant") / ("tiny-256.tmp." + std::to_string(::getpid()));
  const std::string cmd = "/usr/bin/python3 '" + tool.string() + "' --preset tiny-256 --seed 0 --dtype f32 --out '" +
                          tmp.string() + "' > /dev/null 2>&1";
  if (!fs::exists(tool) || std::system(cmd.c_str()) != 0) {
    why = "cannot run " + cmd;
    fs::remove_all(tmp);
    return std::nullopt;
  }
  std::ofstream(tmp / "complete") << "ok\n";
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp);  // another test won the race with an identical copy
  return dir;
}

}  // namespace lemma::quant
