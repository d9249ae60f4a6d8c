// `lemma inspect`: what a model file holds — format, metadata, tensors, sizes, tokenizer, and for
// quantized files the weight matrices kept in a wider type because their rows do not fill the
// format's blocks (or groups).
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_source.h"
#include "lemma/model/config_from_gguf.h"
#include "lemma/model/config_from_hf.h"
#include "lemma/base/error.h"
#include "lemma/bench/capacity.h"
#include "lemma/quant/quantized_safetensors.h"
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
// The matrices a quantized file keeps in a float type because their row length does not fit the
// format (lemma spec, else the file's most common GGUF block type), as llama-quantize keeps them.
void print_kept_wider(const std::vector<TensorRow>& rows, const std::optional<quant::WeightQuantSpec>& spec) {
  std::optional<DType> block;
  if (!spec) {
    std::map<DType, int> count;
    for (const auto& r : rows)
      if (r.view.shape.rank == 2 && dtype_info(r.view.dtype).is_quantized) ++count[r.view.dtype];
    for (const auto& [type, n] : count)
      if (!block || n > count[*block]) block = type;
    if (!block) return;
  }
  std::vector<std::string> lines;
  for (const auto& r : rows) {
    if (r.view.shape.rank != 2 || !dtype_info(r.view.dtype).is_float || !r.name.ends_with("weight")) continue;
    const int64_t cols = r.view.shape[1];
    std::string why;
    if (spec && !quant::fits(*spec, cols)) {
      why = fmt::format("row length {} does not fit {}", cols, spec->to_string());
    } else if (block && cols % static_cast<int64_t>(dtype_info(*block).block_elements) != 0) {
      why = fmt::format("row length {} is not a multiple of {} ({} blocks)", cols, dtype_info(*block).block_elements,
                        dtype_name(*block));
    }
    if (!why.empty())
      lines.push_back(fmt::format("  {:<48} {:<8} {}: {}", r.name, dtype_name(r.view.dtype), r.view.shape.to_string(), why));
  }
  std::printf("kept in a wider type: %zu\n", lines.size());
  for (const auto& line : lines) std::printf("%s\n", line.c_str());
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
    std::optional<quant::WeightQuantSpec> lemma_spec;
    if (source.gguf) {
      const auto& g = *source.gguf;
      std::printf("format: GGUF v%u (alignment %llu)%s\n", g.version(), static_cast<unsigned long long>(g.alignment()),
                  g.tensors().empty() ? ", vocab only" : "");
      std::printf("metadata: %zu keys\n", g.metadata().size());
      for (const auto& [key, value] : g.metadata()) std::printf("  %s = %s\n", key.c_str(), value.to_display().c_str());
      for (const auto& t : g.tensors()) rows.push_back({t.name, t.view});
      load_seconds = g.file().load_seconds();
      lemma_spec = quant::quantized_spec_of(quant::container_of(g));
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
        if (!source.safetensors->shards().empty()) lemma_spec = quant::quantized_spec_of(source.safetensors->shards()[0]);
      }
    }
    if (source.has_weights()) {
      // The model as lemma would run it, or why it cannot.
      try {
        const ModelConfig config = source.gguf ? config_from_gguf(*source.gguf)
                                               : config_from_hf_json(nlohmann::json::parse(source.hf_config_json));
        std::printf("architecture: %s\n", config.summary().c_str());
        // KV cache per token (f32 and bf16 elements); MLA (G28) beside the MHA cache it replaces.
        for (const KvDtype dtype : {KvDtype::kF32, KvDtype::kBf16}) {
          const uint64_t kv = bench::kv_bytes_per_token(config, dtype);
          const uint64_t mha = bench::mha_equivalent_kv_bytes_per_token(config, dtype);
          if (config.mla.enabled()) {
            std::printf("kv cache per token (%s): %llu bytes latent (MLA: %lld x %lld per layer); as MHA: %llu bytes (%.1fx)\n",
                        std::string(kernels::kv_dtype_name(dtype)).c_str(), static_cast<unsigned long long>(kv),
                        static_cast<long long>(config.cache_kv_heads()), static_cast<long long>(config.cache_head_dim()),
                        static_cast<unsigned long long>(mha), static_cast<double>(mha) / static_cast<double>(kv));
          } else {
            std::printf("kv cache per token (%s): %llu bytes\n", std::string(kernels::kv_dtype_name(dtype)).c_str(),
                        static_cast<unsigned long long>(kv));
          }
        }
      } catch (const std::exception& e) {
        std::printf("architecture: not runnable by lemma: %s\n", e.what());
      }
    }
    if (lemma_spec) std::printf("lemma quantization: %s\n", lemma_spec->to_string().c_str());
    if (!rows.empty()) {
      print_tensors(rows, opts->all_tensors);
      print_kept_wider(rows, lemma_spec);
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
