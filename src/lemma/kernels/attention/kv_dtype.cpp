#include "lemma/kernels/attention/kv_dtype.h"

namespace lemma::kernels {

int64_t kv_element_bytes(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32: return 4;
    case KvDtype::kBf16: return 2;
    case KvDtype::kInt8:
    case KvDtype::kFp8: return 1;
  }
  return 4;
}

bool kv_dtype_has_scales(KvDtype dtype) { return dtype == KvDtype::kInt8 || dtype == KvDtype::kFp8; }

const char* kv_dtype_name(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32: return "f32";
    case KvDtype::kBf16: return "bf16";
    case KvDtype::kInt8: return "int8";
    case KvDtype::kFp8: return "fp8";
  }
  return "?";
}

std::optional<KvDtype> parse_kv_dtype(std::string_view name) {
  if (name == "f32") return KvDtype::kF32;
  if (name == "bf16") return KvDtype::kBf16;
  if (name == "int8") return KvDtype::kInt8;
  if (name == "fp8") return KvDtype::kFp8;
  return std::nullopt;
}

}  // namespace lemma::kernels
