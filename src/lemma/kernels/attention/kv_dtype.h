// The element types of the KV cache (G23): f32 (the library's default), bf16, and int8 / fp8-e4m3 with one
// f32 scale per (token, KV head) row. Plain data plus out-of-line helpers, so the per-ISA
// flash-attention files can include it without exporting weak symbols. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lemma::kernels {

enum class KvDtype : uint8_t {
  kF32 = 0,  // exact
  kBf16,     // round to nearest even; no scale
  kInt8,     // code = round(x / scale), scale = absmax / 127
  kFp8,      // e4m3 (OCP "fn": no infinities, max 448), saturating; scale = absmax / 448
};

// Bytes of one stored element (4, 2, 1, 1).
int64_t kv_element_bytes(KvDtype dtype);
// Whether rows carry an f32 scale (int8, fp8).
bool kv_dtype_has_scales(KvDtype dtype);
// "f32", "bf16", "int8", "fp8".
const char* kv_dtype_name(KvDtype dtype);
// The explicit type names f32, bf16, int8, fp8; nullopt for anything else (the command line's
// "auto" depends on the model: cli/kv_cache_option.h).
std::optional<KvDtype> parse_kv_dtype(std::string_view name);

}  // namespace lemma::kernels
