// --kv-cache-dtype auto|f32|bf16|int8|fp8 (vLLM's flag name), shared by generate, chat,
// perplexity, serve and bench model/capacity. "auto" is the model's own precision, as vLLM's auto:
// f32 when the layer weights are f32, else bf16 (lemma's 16-bit KV type; llama.cpp keeps f16 K/V
// for every weight type). It halves the KV bytes of bf16 and quantized models against f32: twice
// the tokens in the same memory, and less to read per decode step at depth.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/tensor/dtype.h"

namespace lemma::cli {

// Adds the option to `sub`, storing the name in `name`.
void add_kv_cache_dtype_option(CLI::App* sub, std::string& name);
// The KvDtype of a flag value for a model whose layer weights are `weights`; throws
// InvalidArgument naming the flag and the accepted names.
kernels::KvDtype parse_kv_cache_dtype(const std::string& name, DType weights);

}  // namespace lemma::cli
