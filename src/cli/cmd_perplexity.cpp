// `lemma perplexity`: perplexity of a text file by llama-perplexity's method, or with attention sinks
// (G10) of one long stream through them (see model/perplexity.h).
#include <cstdio>

#include <fmt/format.h>

#include "cli/runtime_flags.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/kv_cache_option.h"
#include "cli/model_source.h"
#include "cli/progress_option.h"
#include "cli/streaming_option.h"
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
  StreamingFlags streaming;
  int64_t stream_tokens = 0;
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
  opts->streaming.add_to(sub);
  sub->add_option("--stream-tokens", opts->stream_tokens,
                  "With --streaming-window: read the first N tokens of the file as one stream, every token scored "
                  "(default: all of them); --ctx then only groups the per-chunk report");
  bind(sub, [opts] {
    const StreamingWindow streaming = opts->streaming.to_window();
    if (opts->stream_tokens < 0) fail<InvalidArgument>("--stream-tokens must be >= 0, got {}", opts->stream_tokens);
    if (opts->stream_tokens > 0 && !streaming.enabled())
      fail<InvalidArgument>("--stream-tokens needs --streaming-window (attention sinks)");
    const Model model = Model::open(opts->model, LoadMode::kLazyMmap, runtime_options());
    const KvDtype kv_dtype = parse_kv_cache_dtype(opts->kv_cache_dtype, model.weights().attention_matrix().dtype);
    const auto source = open_model_source(opts->model);
    const Tokenizer tokenizer = load_tokenizer(source);
    const std::string text = read_text_file(opts->file);
    const auto tokens = tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/false);
    auto tokens_used = std::span<const int32_t>(tokens);
    if (opts->stream_tokens > 0) tokens_used = tokens_used.first(std::min(tokens.size(), static_cast<size_t>(opts->stream_tokens)));
    std::fprintf(stderr, "%s: %zu tokens, %lld-token chunks, %s KV cache", opts->file.c_str(), tokens_used.size(),
                 static_cast<long long>(opts->ctx), kernels::kv_dtype_name(kv_dtype));
    if (streaming.enabled())
      std::fprintf(stderr, ", one stream with %lld attention sinks and a window of %lld",
                   static_cast<long long>(streaming.num_sinks), static_cast<long long>(streaming.window));
    std::fprintf(stderr, "\n");
    if (const std::string error = streaming_window_error(streaming, model.config().max_position_embeddings);
        !error.empty())
      fail<InvalidArgument>("{}", error);
    PerplexityOptions options;
    options.context = opts->ctx;
    options.kv_dtype = kv_dtype;
    options.num_threads = resolve_threads(opts->threads);
    options.bos_token_id = tokenizer.adds_bos() ? tokenizer.bos_id() : std::nullopt;
    ProgressReporter progress("perplexity", "chunks", 0, progress_options());
    options.on_chunk = [&progress](int64_t chunk, int64_t chunks, double ppl) {
      progress.set_total(chunks);
      progress.update(chunk + 1, fmt::format("running PPL {:.4f}", ppl));
    };
    const auto result = streaming.enabled() ? compute_streaming_perplexity(model, tokens_used, streaming, options)
                                            : compute_perplexity(model, tokens, options);
    progress.finish();
    std::printf("chunks: %lld, scored tokens: %lld\n", static_cast<long long>(result.num_chunks),
                static_cast<long long>(result.num_scored_tokens));
    std::printf("PPL = %.4f\n", result.perplexity);
    return 0;
  });
}

}  // namespace lemma::cli
