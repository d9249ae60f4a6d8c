#include "cli/kv_cache_option.h"

#include "lemma/base/error.h"

namespace lemma::cli {

void add_kv_cache_dtype_option(CLI::App* sub, std::string& name) {
  sub->add_option("--kv-cache-dtype", name,
                  "KV cache element type: auto (the model's precision: f32 for f32 weights, else bf16), f32, bf16, "
                  "int8 or fp8 (e4m3); int8/fp8 keep one f32 scale per token and KV head")
      ->capture_default_str();
}

kernels::KvDtype parse_kv_cache_dtype(const std::string& name, DType weights) {
  if (name == "auto") return weights == DType::kF32 ? kernels::KvDtype::kF32 : kernels::KvDtype::kBf16;
  const auto dtype = kernels::parse_kv_dtype(name);
  if (!dtype) fail<InvalidArgument>("--kv-cache-dtype must be auto, f32, bf16, int8 or fp8, got '{}'", name);
  return *dtype;
}

}  // namespace lemma::cli
