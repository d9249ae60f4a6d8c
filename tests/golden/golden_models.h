// Golden-test support: the tiny-* presets regenerated into the build tree with
// shared/tools/make_bench_model.py (once per build tree, safe against concurrent tests), their
// golden JSON (shared/data/golden/models/<preset>.json), sha256 checks and the logit tolerance of
// golden/README.md.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shared_data.h"

namespace lemma::testing {

struct PresetFiles {
  std::filesystem::path gguf;    // <dir>/<preset>-<dtype>.gguf
  std::filesystem::path hf_dir;  // <dir>/hf
};

// Generates the preset (seed 0, `dtype` "f32" or "bf16") unless already there. Returns nullopt and sets `why` when the
// generator cannot run (no /usr/bin/python3 with numpy, no shared tools).
std::optional<PresetFiles> ensure_preset(const std::string& preset, std::string& why,
                                         const std::string& dtype = "f32");

// Declares `var` = ensure_preset(preset) in a test body; skips the test (fails it under CI) when the
// preset cannot be generated.
#define LEMMA_REQUIRE_PRESET(var, preset)                             \
  std::string why_##var;                                              \
  const auto var = ::lemma::testing::ensure_preset(preset, why_##var); \
  if (!var) {                                                         \
    if (::lemma::testing::running_in_ci()) FAIL() << why_##var;       \
    GTEST_SKIP() << why_##var;                                        \
  }

// <build>/test-scratch/golden-models/<name>, made once per build tree by running the shell `command`
// with each "{OUT}" replaced by a private (quoted) folder that is then renamed into place; nullopt
// with `why` when the command fails.
std::optional<std::filesystem::path> generated_dir(const std::string& name, const std::string& command,
                                                   std::string& why);

// Parsed shared/data/golden/<relative>; cached per process.
const nlohmann::json& golden_json(const std::string& relative);

// sha256 of a file as lower-case hex via `sha256sum`; nullopt when the tool is unavailable.
std::optional<std::string> sha256_of(const std::filesystem::path& path);

// golden/README.md: max |logit - golden| <= 1e-4 * max|golden| + 1e-5 over a sequence.
struct LogitComparison {
  double max_abs_diff = 0.0;
  double max_abs_golden = 0.0;
  int64_t argmax_mismatches = 0;
  double tolerance() const { return 1e-4 * max_abs_golden + 1e-5; }
};
LogitComparison compare_logits(const std::vector<float>& logits, int64_t vocab, const nlohmann::json& golden_rows,
                               const nlohmann::json& golden_argmax);

}  // namespace lemma::testing
