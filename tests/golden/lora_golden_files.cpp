#include "lora_golden_files.h"

#include "support/shared_data.h"

namespace lemma::testing {

std::optional<LoraFiles> ensure_lora_adapters(const std::string& preset, std::string& why) {
  const auto base = ensure_preset(preset, why);
  if (!base) return std::nullopt;
  const auto tool = shared_dir() / "tools" / "make_lora_adapters.py";
  if (!std::filesystem::exists(tool)) {
    why = "cannot regenerate the adapters: missing " + tool.string();
    return std::nullopt;
  }
  const auto dir = generated_dir(preset + "-lora",
                                 "/usr/bin/python3 '" + tool.string() + "' --preset " + preset +
                                     " --seed 0 --out {OUT} > /dev/null 2>&1",
                                 why);
  if (!dir) return std::nullopt;
  return LoraFiles{*base, *dir};
}

const nlohmann::json& lora_golden(const std::string& preset, const std::string& adapter) {
  return golden_json("lora/" + preset + "-" + adapter + ".json");
}

std::string check_adapter_files(const nlohmann::json& golden, const std::filesystem::path& adapters) {
  const auto& adapter = golden["adapter"];
  const auto dir = adapters / adapter["name"].get<std::string>();
  for (const auto& [file, info] : adapter["files"].items()) {
    const auto sha = sha256_of(dir / file);
    if (!sha) {
      if (running_in_ci()) return "sha256sum is unavailable to check " + (dir / file).string();
      continue;
    }
    if (*sha != info["sha256"].get<std::string>()) return (dir / file).string() + ": sha256 " + *sha + " differs";
  }
  return {};
}

}  // namespace lemma::testing
