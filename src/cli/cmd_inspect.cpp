// `lemma inspect`: what a model file holds — format, metadata, tensors, sizes, tokenizer.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_source.h"
#include "lemma/model/config_from_gguf.h"
#include "lemma/model/config_from_hf.h"
#include "lemma/base/error.h"
#include <fmt/format.h>

namespace lemma::cli {

namespace {
struct InspectOptions {
  std::string model;
  std::string load = "lazy";
  bool all_tensors = false;
};

struct TensorRow {
  std::string name;
  TensorView view;
};

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.2f} {}", v, units[u]);
}

void print_tensors(const std::vector<TensorRow>& rows, bool all) {
  uint64_t params = 0, bytes = 0;
  std::map<std::string, int> by_type;
  for (const auto& r : rows) {
    params += static_cast<uint64_t>(r.view.elements());
    bytes += r.view.bytes();
    by_type[std::string(dtype_name(r.view.dtype))]++;
  }
  std::printf("tensors: %zu\n", rows.size());
  std::string types;
  for (const auto& [t, n] : by_type) types += fmt::format("{}{} {}", types.empty() ? "" : ", ", n, t);
  std::printf("tensor types: %s\n", types.c_str());
  std::printf("parameters: %llu (%.3f M)\n", static_cast<unsigned long long>(params), static_cast<double>(params) / 1e6);
  std::printf("tensor bytes: %llu (%s)\n", static_cast<unsigned long long>(bytes), human_bytes(bytes).c_str());
  const size_t limit = all ? rows.size() : std::min<size_t>(rows.size(), 64);
  for (size_t i = 0; i < limit; ++i)
    std::printf("  %-48s %-8s %s\n", rows[i].name.c_str(), std::string(dtype_name(rows[i].view.dtype)).c_str(),
                rows[i].view.shape.to_string().c_str());
  if (limit < rows.size()) std::printf("  ... %zu more (use --all-tensors)\n", rows.size() - limit);
}
}  // namespace

void register_inspect(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand("inspect", "Show a model's format, metadata, tensors and tokenizer");
  sub->add_option("--model,-m", opts->model, "HF directory, .gguf file, or tokenizer-only holder")->required();
  sub->add_option("--load", opts->load, "How to load the weights: lazy (mmap), prefault (mmap + touch), copy")
      ->check(CLI::IsMember({"lazy", "prefault", "copy"}));
  sub->add_flag("--all-tensors", opts->all_tensors, "List every tensor (default: the first 64)");
  bind(sub, [opts] {
    const auto source = open_model_source(opts->model, parse_load_mode(opts->load));
    std::printf("model: %s\n", source.path.c_str());
    std::vector<TensorRow> rows;
    double load_seconds = 0.0;
    if (source.gguf) {
      const auto& g = *source.gguf;
      std::printf("format: GGUF v%u (alignment %llu)%s\n", g.version(), static_cast<unsigned long long>(g.alignment()),
                  g.tensors().empty() ? ", vocab only" : "");
      std::printf("metadata: %zu keys\n", g.metadata().size());
      for (const auto& [key, value] : g.metadata()) std::printf("  %s = %s\n", key.c_str(), value.to_display().c_str());
      for (const auto& t : g.tensors()) rows.push_back({t.name, t.view});
      load_seconds = g.file().load_seconds();
    } else {
      std::printf("format: Hugging Face directory%s\n", source.safetensors ? "" : " (tokenizer only)");
      if (!source.hf_config_json.empty()) {
        const auto config = nlohmann::json::parse(source.hf_config_json, nullptr, false);
        if (!config.is_discarded() && config.is_object()) {
          std::printf("config.json:\n");
          for (const auto& [key, value] : config.items()) std::printf("  %s = %s\n", key.c_str(), value.dump().c_str());
        }
      }
      if (source.safetensors) {
        for (const auto* t : source.safetensors->tensors()) rows.push_back({t->name, t->view});
        load_seconds = source.safetensors->load_seconds();
      }
    }
    if (source.has_weights()) {
      // The model as lemma would run it, or why it cannot.
      try {
        const ModelConfig config = source.gguf ? config_from_gguf(*source.gguf)
                                               : config_from_hf_json(nlohmann::json::parse(source.hf_config_json));
        std::printf("architecture: %s\n", config.summary().c_str());
      } catch (const std::exception& e) {
        std::printf("architecture: not runnable by lemma: %s\n", e.what());
      }
    }
    if (!rows.empty()) {
      print_tensors(rows, opts->all_tensors);
      std::printf("load: %s, %.3f ms\n", opts->load.c_str(), load_seconds * 1e3);
    }
    try {
      const auto tokenizer = load_tokenizer(source);
      std::printf("tokenizer: %s\n", tokenizer.summary().c_str());
    } catch (const Error& e) {
      std::printf("tokenizer: none (%s)\n", e.what());
    }
    const auto tmpl = find_chat_template(source);
    std::printf("chat template: %s\n", tmpl ? fmt::format("{} bytes", tmpl->size()).c_str() : "none");
    return 0;
  });
}

}  // namespace lemma::cli
