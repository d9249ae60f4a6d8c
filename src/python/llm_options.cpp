#include "llm_options.h"

#include <algorithm>
#include <thread>

#include "lemma/base/error.h"
#include "lemma/kernels/attention/kv_dtype.h"

namespace lemma::python {

namespace {

constexpr uint64_t kDefaultKvBudgetBytes = 4ull << 30;  // as `lemma serve`

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

kernels::KvDtype kv_dtype_of(const std::string& name, DType weights) {
  if (name == "auto") return weights == DType::kF32 ? kernels::KvDtype::kF32 : kernels::KvDtype::kBf16;
  const auto dtype = kernels::parse_kv_dtype(name);
  if (!dtype) fail<InvalidArgument>("kv_cache_dtype must be 'auto', 'f32', 'bf16', 'int8' or 'fp8', got '{}'", name);
  return *dtype;
}

}  // namespace

LoadMode load_mode_of(const LlmOptions& o) {
  if (o.load == "lazy") return LoadMode::kLazyMmap;
  if (o.load == "prefault") return LoadMode::kPrefaultMmap;
  if (o.load == "copy") return LoadMode::kCopy;
  fail<InvalidArgument>("load must be 'lazy', 'prefault' or 'copy', got '{}'", o.load);
}

RuntimeOptions runtime_options_of(const LlmOptions& o) {
  RuntimeOptions r;
  if (!o.isa.empty()) {
    const auto isa = kernels::parse_isa(o.isa);
    if (!isa) fail<InvalidArgument>("isa must be 'amx', 'avx512', 'avx2' or 'scalar', got '{}'", o.isa);
    if (*isa > kernels::detected_isa())
      fail<Unsupported>("isa='{}' but this machine supports at most '{}'", o.isa,
                        kernels::isa_name(kernels::detected_isa()));
    r.isa = *isa;
  }
  if (o.matmul_precision == "f32") r.activations = kernels::ActivationPolicy::kF32;
  else if (o.matmul_precision != "auto")
    fail<InvalidArgument>("matmul_precision must be 'auto' or 'f32', got '{}'", o.matmul_precision);
  if (o.threads < 0) fail<InvalidArgument>("threads must be >= 0 (0: one per core), got {}", o.threads);
  r.interleave = o.interleave;
  r.decode_plans = o.decode_plans;
  r.pin_threads = o.pin_threads;
  r.num_threads = o.threads;
  return r;
}

int64_t resolve_max_model_len(const LlmOptions& o, const ModelConfig& config) {
  if (o.max_model_len < 0) fail<InvalidArgument>("max_model_len must be >= 0 (0: the model's), got {}", o.max_model_len);
  const int64_t context = config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096;
  return o.max_model_len > 0 ? std::min(context, o.max_model_len) : context;
}

EngineConfig engine_config_of(const LlmOptions& o, const Model& model) {
  if (o.max_num_seqs < 1) fail<InvalidArgument>("max_num_seqs must be >= 1, got {}", o.max_num_seqs);
  if (o.max_num_batched_tokens < 1)
    fail<InvalidArgument>("max_num_batched_tokens must be >= 1, got {}", o.max_num_batched_tokens);
  if (o.block_size < 1) fail<InvalidArgument>("block_size must be >= 1, got {}", o.block_size);
  if (o.kv_cache_tokens < 0) fail<InvalidArgument>("kv_cache_tokens must be >= 0, got {}", o.kv_cache_tokens);
  const ModelConfig& mc = model.config();
  const int64_t max_model_len = resolve_max_model_len(o, mc);
  const kernels::KvDtype kv_dtype = kv_dtype_of(o.kv_cache_dtype, model.weights().layers.at(0).q.dtype);
  const auto bytes_per_token =
      static_cast<int64_t>(KvCache::kv_cache_bytes_per_token(mc.num_layers, mc.num_kv_heads, mc.head_dim, kv_dtype));
  int64_t kv_tokens = o.kv_cache_tokens;
  if (kv_tokens == 0)  // every sequence at full length within the budget, but at least one
    kv_tokens = std::max(max_model_len, std::min<int64_t>(o.max_num_seqs * max_model_len,
                                                          static_cast<int64_t>(kDefaultKvBudgetBytes) / bytes_per_token));

  EngineConfig c;
  c.scheduler.max_num_seqs = o.max_num_seqs;
  c.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  c.scheduler.max_model_len = max_model_len;
  c.kv.block_size = o.block_size;
  c.kv.num_device_blocks = static_cast<int32_t>((kv_tokens + o.block_size - 1) / o.block_size);
  c.kv.enable_prefix_caching = o.enable_prefix_caching;
  c.kv_dtype = kv_dtype;
  c.num_threads = resolve_threads(o.threads);
  c.default_seed = o.seed;
  return c;
}

}  // namespace lemma::python
