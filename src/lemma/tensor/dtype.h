// Element types lemma stores: plain scalars and GGUF block-quantized formats.
// A block format packs `block_elements` values into `block_bytes` bytes; scalars are blocks of 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lemma {

enum class DType : uint8_t {
  kF32, kF16, kBF16, kF64, kF8E4M3, kF8E5M2,
  kI8, kU8, kI16, kI32, kI64, kBool,
  // GGUF block formats (ggml names)
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ8_1,
  kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kQ8_K,
  // GGUF's non-linear 4-bit formats: codes index a fixed 16-value table (quant_blocks.h)
  kIQ4_NL, kIQ4_XS,
  // lemma's in-memory block layouts (kernels/lemma_int_blocks.h); no file stores them: lemma int
  // safetensors are re-laid out into them at load (quant/runnable_weights.h)
  kI8Z32, kI4Z32, kW8A8,
  kCount
};

struct DTypeInfo {
  std::string_view name;  // lower-case, as `inspect` prints it (f32, bf16, q4_k, ...)
  size_t block_elements;  // values per block (1 for scalars)
  size_t block_bytes;     // bytes per block
  bool is_float;          // scalar floating point
  bool is_quantized;      // block format
};

const DTypeInfo& dtype_info(DType type);
inline std::string_view dtype_name(DType type) { return dtype_info(type).name; }

// Bytes taken by `elements` values; nullopt when `elements` is not a whole number of blocks
// or the size overflows.
std::optional<uint64_t> dtype_bytes(DType type, uint64_t elements);

// safetensors dtype strings: "F32", "F16", "BF16", "F64", "F8_E4M3", "F8_E5M2", "I8", "U8", "I16",
// "I32", "I64", "BOOL".
std::optional<DType> dtype_from_safetensors(std::string_view name);
std::string_view dtype_to_safetensors(DType type);

// GGUF tensor type ids (ggml_type); nullopt for ids lemma does not know.
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
// ggml's name for a type id lemma does not read (IQ2_XXS, IQ3_S, TQ1_0, ...); empty for ids ggml
// never had or retired. For error messages.
std::string_view unsupported_ggml_type_name(uint32_t ggml_type);
std::optional<uint32_t> dtype_to_ggml(DType type);

}  // namespace lemma
