// --kv-cache-dtype auto|f32|bf16|int8|fp8 (vLLM's flag name; auto = f32), shared by generate, chat,
// perplexity, serve and bench model/capacity.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "lemma/kernels/attention/kv_dtype.h"

namespace lemma::cli {

// Adds the option to `sub`, storing the name in `name`.
void add_kv_cache_dtype_option(CLI::App* sub, std::string& name);
// The KvDtype of a flag value; throws InvalidArgument naming the flag and the accepted names.
kernels::KvDtype parse_kv_cache_dtype(const std::string& name);

}  // namespace lemma::cli
