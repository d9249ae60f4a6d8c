// `lemma serve`: the OpenAI-compatible HTTP server over the continuous-batching engine (G1, G13,
// G14, G31, G32, G34, G36). Flags follow vLLM's names. Blocks until SIGINT/SIGTERM, then drains.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/lora_option.h"
#include "cli/speculative_option.h"
#include "cli/streaming_option.h"
#include "cli/runtime_flags.h"
#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/kv_cache_option.h"
#include "cli/model_source.h"
#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/bench/capacity.h"
#include "lemma/model/model.h"
#include "lemma/server/connection_table.h"
#include "lemma/server/data_parallel_client.h"
#include "lemma/server/disaggregated_client.h"
#include "lemma/server/prefix_router.h"
#include "lemma/server/engine_service.h"
#include "lemma/server/server.h"
#include "lemma/tokenizer/jinja/chat_template.h"

namespace lemma::cli {

namespace {

struct ServeOptions {
  std::string model, host = "127.0.0.1", api_key, chat_template_file, served_model_name, load = "lazy";
  std::string preemption_mode = "recompute";
  std::string kv_cache_dtype = "auto";
  SpeculativeFlags speculative;
  StreamingFlags streaming;  // the default of requests that give no attention_sinks / streaming_window
  LoraFlags lora;
  std::vector<std::string> allowed_origins;
  int64_t response_store_size = 1024;
  std::string pooling = "last";
  int port = 8000;
  int32_t max_num_seqs = 32;
  int64_t max_num_batched_tokens = 512;
  int64_t kv_cache_tokens = 0;
  int64_t swap_space_tokens = 0;
  int64_t max_model_len = 0;
  int64_t max_request_bytes = 1 << 20;
  int64_t max_waiting = 256;
  int64_t max_connections = 0;
  double header_timeout_s = 10.0;
  int32_t block_size = 16;
  int threads = 0;
  double request_timeout_s = 600.0;
  double shutdown_grace_s = 10.0;
  uint64_t seed = 0;
  bool no_prefix_caching = false;
  bool no_chunked_prefill = false;
  bool allow_special_tokens_in_content = false;
  int data_parallel_size = 1;
  std::string data_parallel_routing = "prefix";
  int64_t router_history_blocks = 65536;
  bool disaggregate_prefill = false;
  int prefill_threads = 0;
};

constexpr uint64_t kDefaultKvBudgetBytes = 4ull << 30;

// The default name clients use in "model": the file name without extension, or the directory's name.
std::string default_served_name(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // trailing slash
  return std::filesystem::is_directory(p) ? p.filename().string() : p.stem().string();
}

server::EngineServiceConfig engine_service_config(const ServeOptions& o, const Model& model, const Tokenizer& tokenizer,
                                                  int64_t max_model_len) {
  if (o.max_num_seqs < 1) fail<InvalidArgument>("--max-num-seqs must be >= 1, got {}", o.max_num_seqs);
  if (o.max_num_batched_tokens < 1)
    fail<InvalidArgument>("--max-num-batched-tokens must be >= 1, got {}", o.max_num_batched_tokens);
  if (o.block_size < 1) fail<InvalidArgument>("--block-size must be >= 1, got {}", o.block_size);
  if (o.kv_cache_tokens < 0 || o.swap_space_tokens < 0)
    fail<InvalidArgument>("--kv-cache-tokens and --swap-space-tokens must be >= 0");
  if (o.preemption_mode != "recompute" && o.preemption_mode != "swap")
    fail<InvalidArgument>("--preemption-mode must be recompute or swap, got '{}'", o.preemption_mode);
  const KvDtype kv_dtype = parse_kv_cache_dtype(o.kv_cache_dtype, model.weights().attention_matrix().dtype);
  const auto kv_bytes_per_token = static_cast<int64_t>(bench::kv_bytes_per_token(model.config(), kv_dtype));
  int64_t kv_tokens = o.kv_cache_tokens;
  if (kv_tokens == 0)  // every sequence at full length, within a memory budget, but at least one
    kv_tokens = std::max(max_model_len, std::min<int64_t>(o.max_num_seqs * max_model_len,
                                                          static_cast<int64_t>(kDefaultKvBudgetBytes) /
                                                              kv_bytes_per_token));
  if (kv_tokens < max_model_len)
    log().warn("--kv-cache-tokens {} is below max_model_len {}: longer requests are refused", kv_tokens, max_model_len);

  server::EngineServiceConfig c;
  c.engine.scheduler.max_num_seqs = o.max_num_seqs;
  c.engine.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  c.engine.scheduler.max_model_len = max_model_len;
  c.engine.scheduler.enable_chunked_prefill = !o.no_chunked_prefill;
  if (o.no_chunked_prefill) c.engine.scheduler.max_num_batched_tokens = std::max(o.max_num_batched_tokens, max_model_len);
  c.engine.scheduler.preemption_mode = o.preemption_mode == "swap" ? PreemptionMode::kSwap : PreemptionMode::kRecompute;
  SpeculativeFlags speculative = o.speculative;
  speculative.target_model = o.model;  // --speculative-method mtp reads its MTP module
  c.engine.speculative = speculative.to_options(o.block_size);
  c.engine.kv.block_size = o.block_size;
  c.engine.kv.num_device_blocks = static_cast<int32_t>((kv_tokens + o.block_size - 1) / o.block_size);
  c.engine.kv.num_host_blocks = static_cast<int32_t>((o.swap_space_tokens + o.block_size - 1) / o.block_size);
  c.engine.kv.enable_prefix_caching = !o.no_prefix_caching;
  c.engine.kv_dtype = kv_dtype;
  c.engine.num_threads = resolve_threads(o.threads);
  c.end_of_generation_ids = tokenizer.end_of_generation_ids();
  c.max_waiting_requests = static_cast<size_t>(std::max<int64_t>(1, o.max_waiting));
  c.seed = o.seed;
  return c;
}

// D whole engines over the one (immutable) model, the threads split between them, behind a router.
std::unique_ptr<server::EngineClient> make_data_parallel_engines(const ServeOptions& o, const Model& model,
                                                                 server::EngineServiceConfig& config) {
  if (o.data_parallel_routing != "prefix" && o.data_parallel_routing != "round-robin")
    fail<InvalidArgument>("--data-parallel-routing must be prefix or round-robin, got '{}'", o.data_parallel_routing);
  if (o.router_history_blocks < 1)
    fail<InvalidArgument>("--router-history-blocks must be >= 1, got {}", o.router_history_blocks);
  config.engine.num_threads = std::max(1, config.engine.num_threads / o.data_parallel_size);
  std::vector<std::unique_ptr<server::EngineClient>> replicas;
  for (int r = 0; r < o.data_parallel_size; ++r) {
    server::EngineServiceConfig replica = config;
    // Distinct derived seeds per replica (a request's own seed is used as given everywhere).
    if (replica.seed != 0) replica.seed = choice_seed(config.seed, static_cast<uint64_t>(r));
    replicas.push_back(std::make_unique<server::EngineService>(model, replica));
  }
  const auto policy = o.data_parallel_routing == "prefix" ? server::RoutingPolicy::kPrefix
                                                          : server::RoutingPolicy::kRoundRobin;
  auto router = std::make_unique<server::PrefixRouter>(o.data_parallel_size, o.block_size,
                                                       static_cast<std::size_t>(o.router_history_blocks), policy);
  return std::make_unique<server::DataParallelClient>(std::move(replicas), std::move(router));
}

// A prefill engine and a decode engine over the one model, the threads split between them (G24).
std::unique_ptr<server::EngineClient> make_disaggregated_engines(const ServeOptions& o, const Model& model,
                                                                 server::EngineServiceConfig& config) {
  if (o.data_parallel_size != 1)
    fail<InvalidArgument>("--disaggregate-prefill runs one prefill and one decode engine; it does not combine with "
                          "--data-parallel-size {}", o.data_parallel_size);
  if (o.no_prefix_caching)
    fail<InvalidArgument>("--disaggregate-prefill hands prompts over through the prefix cache; drop --no-prefix-caching");
  const int total = config.engine.num_threads;
  if (o.prefill_threads < 0 || (o.prefill_threads > 0 && o.prefill_threads >= std::max(total, 2)))
    fail<InvalidArgument>("--prefill-threads must leave the decode engine at least one of the {} threads, got {}",
                          total, o.prefill_threads);
  server::EngineServiceConfig prefill = config;
  prefill.engine.num_threads = o.prefill_threads > 0 ? o.prefill_threads : std::max(1, total / 2);
  prefill.engine.speculative = {};  // one token per prompt: nothing to speculate
  config.engine.num_threads = std::max(1, total - prefill.engine.num_threads);
  return std::make_unique<server::DisaggregatedClient>(std::make_unique<server::EngineService>(model, prefill),
                                                       std::make_unique<server::EngineService>(model, config),
                                                       o.block_size);
}

int serve(const ServeOptions& o) {
  if (o.data_parallel_size < 1) fail<InvalidArgument>("--data-parallel-size must be >= 1, got {}", o.data_parallel_size);
  if (o.port < 0 || o.port > 65535) fail<InvalidArgument>("--port must be in [0, 65535], got {}", o.port);
  if (o.max_request_bytes < 1) fail<InvalidArgument>("--max-request-bytes must be >= 1");
  if (!(o.request_timeout_s > 0) || !(o.shutdown_grace_s >= 0) || !(o.header_timeout_s > 0))
    fail<InvalidArgument>("--request-timeout and --header-timeout must be > 0 and --shutdown-grace >= 0 (seconds)");
  if (o.max_connections < 0) fail<InvalidArgument>("--max-connections must be >= 0 (0: from the open-file limit)");
  // Block SIGINT/SIGTERM before any thread starts (engine, workers, I/O), so only run_server's
  // sigwait receives them and the drain always runs.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const Model model = Model::open(o.model, parse_load_mode(o.load), runtime_options());
  const auto source = open_model_source(o.model);
  const Tokenizer tokenizer = load_tokenizer(source);
  int64_t max_model_len = model.config().max_position_embeddings > 0 ? model.config().max_position_embeddings : 4096;
  if (o.max_model_len > 0) max_model_len = std::min(max_model_len, o.max_model_len);

  std::string template_text;
  if (!o.chat_template_file.empty()) template_text = read_text_file(o.chat_template_file);
  else if (auto found = find_chat_template(source)) template_text = std::move(*found);
  std::optional<ChatTemplate> chat_template;
  if (!template_text.empty()) chat_template.emplace(template_text, "chat template");
  else log().warn("the model has no chat template; /v1/chat/completions uses lemma's default ChatML");

  auto service_config = engine_service_config(o, model, tokenizer, max_model_len);
  std::unique_ptr<server::EngineClient> engine;
  if (o.disaggregate_prefill) {
    engine = make_disaggregated_engines(o, model, service_config);
  } else if (o.data_parallel_size == 1) {
    engine = std::make_unique<server::EngineService>(model, service_config);
  } else {
    engine = make_data_parallel_engines(o, model, service_config);
  }

  server::ServerConfig config;
  config.host = o.host;
  config.port = static_cast<uint16_t>(o.port);
  config.api_key = o.api_key;
  config.max_request_bytes = static_cast<size_t>(o.max_request_bytes);
  config.served_model_name = o.served_model_name.empty() ? default_served_name(o.model) : o.served_model_name;
  config.max_model_len = max_model_len;
  config.default_streaming = o.streaming.to_window();
  if (const std::string error = streaming_window_error(config.default_streaming, max_model_len); !error.empty())
    fail<InvalidArgument>("--attention-sinks / --streaming-window: {}", error);
  // Each beam is a running sequence: a wider search could never be admitted.
  config.max_beam_width = std::min<int64_t>(config.max_beam_width, o.max_num_seqs);
  config.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_s * 1000));
  config.shutdown_grace = std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_grace_s * 1000));
  config.header_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.header_timeout_s * 1000));
  config.max_connections = server::resolve_max_connections(static_cast<size_t>(o.max_connections));
  config.allow_special_tokens_in_content = o.allow_special_tokens_in_content;
  config.allowed_origins = o.allowed_origins;
  config.response_store_entries = static_cast<size_t>(o.response_store_size);
  config.pooling = o.pooling == "mean" ? Pooling::kMean : Pooling::kLast;
  config.lora_pool = o.lora.make_pool(model.config());  // start-time modules load (and are checked) here
  if (config.lora_pool)
    for (const LoraModuleInfo& m : config.lora_pool->list())
      std::fprintf(stderr, "lemma serve: LoRA adapter '%s' (rank %lld) from %s\n", m.name.c_str(),
                   static_cast<long long>(m.rank), m.path.string().c_str());
  std::fprintf(stderr,
               "lemma serve: model '%s' on http://%s:%d (max_model_len %lld, KV %d blocks x %d tokens %s, "
               "max_num_seqs %d, token budget %lld, %d threads, %zu connections at most)\n",
               config.served_model_name.c_str(), o.host.c_str(), o.port, static_cast<long long>(max_model_len),
               service_config.engine.kv.num_device_blocks, o.block_size,
               kernels::kv_dtype_name(service_config.engine.kv_dtype), o.max_num_seqs,
               static_cast<long long>(service_config.engine.scheduler.max_num_batched_tokens),
               service_config.engine.num_threads, config.max_connections);
  if (o.disaggregate_prefill)
    std::fprintf(stderr, "lemma serve: prefill/decode disaggregated: a prefill engine hands each prompt's KV blocks to "
                 "the decode engine (%d decode threads)\n", service_config.engine.num_threads);
  if (o.data_parallel_size > 1)
    std::fprintf(stderr, "lemma serve: %d data-parallel replicas (%s routing), each with its own KV cache of %d blocks\n",
                 o.data_parallel_size, o.data_parallel_routing.c_str(), service_config.engine.kv.num_device_blocks);
  const int rc = server::run_server(config, *engine, tokenizer, std::move(chat_template));
  engine.reset();  // every replica drains and joins its engine thread
  return rc;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  auto* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server with continuous batching");
  sub->add_option("--model,-m", o->model, "HF directory or .gguf file")->required();
  sub->add_option("--host", o->host, "Address to bind")->capture_default_str();
  sub->add_option("--port", o->port, "Port to bind (0: any free port)")->capture_default_str();
  sub->add_option("--api-key", o->api_key, "Require 'Authorization: Bearer KEY' (or 'x-api-key: KEY') on /v1 routes");
  sub->add_option("--allowed-origins", o->allowed_origins,
                  "CORS: origins browsers may call from, e.g. http://localhost:3000 ('*': any; default: CORS off)")
      ->delimiter(',');
  sub->add_option("--response-store-size", o->response_store_size,
                  "/v1/responses kept in memory for previous_response_id (least recently used dropped; 0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--pooling", o->pooling,
                  "/v1/embeddings: pool the final hidden states of the input's last token or their mean (L2-normalised)")
      ->capture_default_str()
      ->check(CLI::IsMember({"last", "mean"}));
  sub->add_option("--served-model-name", o->served_model_name,
                  "Name clients send as \"model\" (default: the model file's name without extension)");
  sub->add_option("--chat-template", o->chat_template_file, "Jinja chat template file (default: the model's, else ChatML)");
  sub->add_option("--max-num-seqs", o->max_num_seqs, "Sequences running at once")->capture_default_str();
  sub->add_option("--max-num-batched-tokens", o->max_num_batched_tokens, "Token budget per engine step")
      ->capture_default_str();
  sub->add_option("--kv-cache-tokens", o->kv_cache_tokens,
                  "Tokens the paged KV cache holds (default: max_num_seqs x max_model_len within 4 GiB)");
  sub->add_option("--block-size", o->block_size, "Tokens per KV block")->capture_default_str();
  add_kv_cache_dtype_option(sub, o->kv_cache_dtype);
  o->speculative.add_to(sub);
  o->streaming.add_to(sub);
  o->lora.add_to(sub, /*select=*/false);
  sub->add_option("--max-model-len", o->max_model_len, "Prompt + output tokens at most (default: the model's)");
  sub->add_option("--max-request-bytes", o->max_request_bytes, "Larger request bodies get 413")->capture_default_str();
  sub->add_option("--max-waiting", o->max_waiting, "Queued requests at most; beyond it 429 with Retry-After")
      ->capture_default_str();
  sub->add_flag("--allow-special-tokens-in-content", o->allow_special_tokens_in_content,
                "Read special-token text in request messages (e.g. <|im_end|>) as control tokens, as other servers "
                "do (default: plain text; only the chat template makes control tokens)");
  sub->add_option("--max-connections", o->max_connections,
                  "Client connections at most; beyond it idle keep-alive ones are closed, else 503 (0: half the "
                  "open-file limit)")
      ->capture_default_str();
  sub->add_option("--header-timeout", o->header_timeout_s,
                  "Seconds a connection gets to send a complete request header (slowloris)")
      ->capture_default_str();
  sub->add_option("--preemption-mode", o->preemption_mode, "recompute or swap")->capture_default_str();
  sub->add_option("--swap-space-tokens", o->swap_space_tokens, "Host-side KV tier for swap preemption (tokens)");
  sub->add_flag("--no-prefix-caching", o->no_prefix_caching, "Do not reuse KV blocks across requests");
  sub->add_flag("--no-chunked-prefill", o->no_chunked_prefill, "Prefill each prompt in one step");
  sub->add_option("--threads,-t", o->threads, "Threads per forward (0: one per core)")->capture_default_str();
  sub->add_option("--request-timeout", o->request_timeout_s, "Seconds a request may take from arrival (then it ends)")
      ->capture_default_str();
  sub->add_option("--shutdown-grace", o->shutdown_grace_s, "Seconds in-flight requests get after SIGTERM")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed for requests that give none (0: random)");
  sub->add_option("--data-parallel-size,--dp", o->data_parallel_size,
                  "Engine replicas, each with its own KV cache and scheduler, sharing the threads (default 1)")
      ->capture_default_str();
  sub->add_option("--data-parallel-routing", o->data_parallel_routing,
                  "How requests pick a replica: prefix (longest cached prefix, then load) or round-robin")
      ->capture_default_str();
  sub->add_flag("--disaggregate-prefill", o->disaggregate_prefill,
                "Compute prompts on a separate prefill engine and hand their KV blocks to the decode engine");
  sub->add_option("--prefill-threads", o->prefill_threads,
                  "Threads of the prefill engine with --disaggregate-prefill (0: half)")
      ->capture_default_str();
  sub->add_option("--router-history-blocks", o->router_history_blocks,
                  "KV-block hashes the router remembers per replica (LRU)")
      ->capture_default_str();
  sub->add_option("--load", o->load, "Weight loading: lazy, prefault or copy")->capture_default_str();
  bind(sub, [o] { return serve(*o); });
}

}  // namespace lemma::cli
