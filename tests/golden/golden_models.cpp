#include "golden_models.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>

#include "lemma/model/greedy_generate.h"
#include "support/shared_data.h"

namespace lemma::testing {

namespace fs = std::filesystem;

std::optional<fs::path> generated_dir(const std::string& name, const std::string& command, std::string& why) {
  const fs::path root = build_scratch("golden-models");
  const fs::path dir = root / name;
  if (fs::exists(dir / "complete")) return dir;
  // Generate into a private folder, then rename it into place (atomic; a concurrent test that
  // wins the race leaves its copy, which is identical).
  const fs::path tmp = root / (name + ".tmp." + std::to_string(::getpid()));
  fs::remove_all(tmp);
  std::string cmd = command;
  for (size_t at; (at = cmd.find("{OUT}")) != std::string::npos;) cmd.replace(at, 5, "'" + tmp.string() + "'");
  if (std::system(cmd.c_str()) != 0) {
    why = "generator failed: " + cmd;
    fs::remove_all(tmp);
    return std::nullopt;
  }
  std::ofstream(tmp / "complete") << "ok\n";
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp);
  return dir;
}

std::optional<PresetFiles> ensure_preset(const std::string& preset, std::string& why, const std::string& dtype) {
  const std::string name = dtype == "f32" ? preset : preset + "-" + dtype;
  const fs::path tool = shared_dir() / "tools" / "make_bench_model.py";
  if (!fs::exists(build_scratch("golden-models") / name / "complete") &&
      (!fs::exists(tool) || !fs::exists("/usr/bin/python3"))) {
    why = "cannot regenerate " + preset + ": need /usr/bin/python3 and " + tool.string();
    return std::nullopt;
  }
  const auto dir = generated_dir(name,
                                 "/usr/bin/python3 '" + tool.string() + "' --preset " + preset + " --seed 0 --dtype " +
                                     dtype + " --out {OUT} > /dev/null 2>&1",
                                 why);
  if (!dir) return std::nullopt;
  return PresetFiles{*dir / (preset + "-" + dtype + ".gguf"), *dir / "hf"};
}

const nlohmann::json& golden_json(const std::string& relative) {
  static std::mutex mutex;
  static std::map<std::string, nlohmann::json> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(relative);
  if (it == cache.end())
    it = cache.emplace(relative, nlohmann::json::parse(read_file(shared_data("golden/" + relative)))).first;
  return it->second;
}

std::optional<std::string> sha256_of(const fs::path& path) {
  const std::string cmd = "sha256sum '" + path.string() + "' 2>/dev/null";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return std::nullopt;
  char buffer[65] = {};
  const size_t n = std::fread(buffer, 1, 64, pipe);
  const int rc = ::pclose(pipe);
  if (rc != 0 || n != 64) return std::nullopt;
  return std::string(buffer, 64);
}

LogitComparison compare_logits(const std::vector<float>& logits, int64_t vocab, const nlohmann::json& rows,
                               const nlohmann::json& argmax_json) {
  LogitComparison r;
  for (size_t t = 0; t < rows.size(); ++t) {
    const auto& row = rows[t];
    for (int64_t v = 0; v < vocab; ++v) {
      const double g = row[static_cast<size_t>(v)].get<double>();
      r.max_abs_golden = std::max(r.max_abs_golden, std::abs(g));
      r.max_abs_diff = std::max(r.max_abs_diff, std::abs(g - logits[t * static_cast<size_t>(vocab) + static_cast<size_t>(v)]));
    }
    const auto got = greedy_token(std::span<const float>(logits).subspan(t * static_cast<size_t>(vocab), static_cast<size_t>(vocab)));
    if (got != argmax_json[t].get<int32_t>()) ++r.argmax_mismatches;
  }
  return r;
}

}  // namespace lemma::testing
