// LlmOptions: the engine settings of Python's `LLM(model=..., **options)` as plain data, and their
// translation into what Model::open and the Engine take (RuntimeOptions, LoadMode, EngineConfig).
// The Python layer fills it from keyword arguments; nothing here reads the environment.
// Pure functions; each throws InvalidArgument naming the keyword that is out of range.
#pragma once

#include <cstdint>
#include <string>

#include "lemma/base/mapped_file.h"
#include "lemma/engine/engine.h"
#include "lemma/model/model.h"
#include "lemma/model/runtime_options.h"

namespace lemma::python {

struct LlmOptions {
  std::string model = {};                  // GGUF file or Hugging Face directory
  std::string load = "lazy";               // weights: lazy (mmap), prefault, copy
  std::string kv_cache_dtype = "auto";     // auto (f32 for f32 weights, else bf16), f32, bf16, int8, fp8
  std::string isa = {};                    // amx, avx512, avx2, scalar; empty: the machine's best
  std::string matmul_precision = "auto";   // auto or f32
  bool interleave = true;                  // re-lay matrices for the interleaved kernels
  bool decode_plans = true;                // decode steps replay captured matmul plans
  bool pin_threads = true;                 // pin forward workers to CPUs
  int threads = 0;                         // threads per forward; 0: one per core
  int32_t max_num_seqs = 32;               // sequences running at once
  int64_t max_num_batched_tokens = 512;    // token budget per engine step (chunked prefill)
  int64_t max_model_len = 0;               // prompt + output tokens; 0: the model's context
  int64_t kv_cache_tokens = 0;             // 0: max_num_seqs x max_model_len within 4 GiB
  int32_t block_size = 16;                 // tokens per KV block
  bool enable_prefix_caching = true;
  uint64_t seed = 0;                       // seed of requests whose SamplingParams give none
};

LoadMode load_mode_of(const LlmOptions& o);
// Throws Unsupported for an ISA this machine lacks.
RuntimeOptions runtime_options_of(const LlmOptions& o);
// max_model_len clipped to the model's context (4096 when the model states none).
int64_t resolve_max_model_len(const LlmOptions& o, const ModelConfig& config);
// The Engine's scheduler, KV cache and thread settings for `model`.
EngineConfig engine_config_of(const LlmOptions& o, const Model& model);

}  // namespace lemma::python
