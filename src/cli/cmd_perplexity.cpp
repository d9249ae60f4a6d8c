// `lemma perplexity`: perplexity of a text file by llama-perplexity's method (see model/perplexity.h).
#include <cstdio>

#include "cli/runtime_flags.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/kv_cache_option.h"
#include "cli/model_source.h"
#include "lemma/base/error.h"
#include "lemma/model/model.h"
#include "lemma/model/perplexity.h"

namespace lemma::cli {

namespace {
struct PerplexityCliOptions {
  std::string model, file;
  int64_t ctx = 512;
  int threads = 0;
  std::string kv_cache_dtype = "auto";
};
}  // namespace

void register_perplexity(CLI::App& app) {
  auto opts = std::make_shared<PerplexityCliOptions>();
  auto* sub = app.add_subcommand("perplexity", "Perplexity of a text file; the last line is 'PPL = <value>'");
  sub->add_option("--model,-m", opts->model, "HF directory or .gguf file")->required();
  sub->add_option("--file,-f", opts->file, "Text file")->required();
  sub->add_option("--ctx,-c", opts->ctx, "Tokens per chunk")->capture_default_str();
  sub->add_option("--threads", opts->threads, "Threads per forward (default: one per core)");
  add_kv_cache_dtype_option(sub, opts->kv_cache_dtype);
  bind(sub, [opts] {
    const Model model = Model::open(opts->model, LoadMode::kLazyMmap, runtime_options());
    const KvDtype kv_dtype = parse_kv_cache_dtype(opts->kv_cache_dtype, model.weights().layers.at(0).q.dtype);
    const auto source = open_model_source(opts->model);
    const Tokenizer tokenizer = load_tokenizer(source);
    const std::string text = read_text_file(opts->file);
    const auto tokens = tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/false);
    std::fprintf(stderr, "%s: %zu tokens, %lld-token chunks, %s KV cache\n", opts->file.c_str(), tokens.size(),
                 static_cast<long long>(opts->ctx), kernels::kv_dtype_name(kv_dtype));
    PerplexityOptions options;
    options.context = opts->ctx;
    options.kv_dtype = kv_dtype;
    options.num_threads = resolve_threads(opts->threads);
    options.bos_token_id = tokenizer.adds_bos() ? tokenizer.bos_id() : std::nullopt;
    options.on_chunk = [](int64_t chunk, int64_t chunks, double ppl) {
      std::fprintf(stderr, "[%lld/%lld] running PPL %.4f\n", static_cast<long long>(chunk + 1),
                   static_cast<long long>(chunks), ppl);
    };
    const auto result = compute_perplexity(model, tokens, options);
    std::printf("chunks: %lld, scored tokens: %lld\n", static_cast<long long>(result.num_chunks),
                static_cast<long long>(result.num_scored_tokens));
    std::printf("PPL = %.4f\n", result.perplexity);
    return 0;
  });
}

}  // namespace lemma::cli
