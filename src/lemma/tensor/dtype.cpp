#include "lemma/tensor/dtype.h"

#include <array>
#include <cstring>

namespace lemma {

namespace {
// Indexed by DType. Block layouts follow ggml's definitions (e.g. Q8_0 = f16 scale + 32 int8).
constexpr std::array<DTypeInfo, static_cast<size_t>(DType::kCount)> kInfo{{
    {"f32", 1, 4, true, false},
    {"f16", 1, 2, true, false},
    {"bf16", 1, 2, true, false},
    {"f64", 1, 8, true, false},
    {"f8_e4m3", 1, 1, true, false},
    {"f8_e5m2", 1, 1, true, false},
    {"i8", 1, 1, false, false},
    {"u8", 1, 1, false, false},
    {"i16", 1, 2, false, false},
    {"i32", 1, 4, false, false},
    {"i64", 1, 8, false, false},
    {"bool", 1, 1, false, false},
    {"q4_0", 32, 18, false, true},
    {"q4_1", 32, 20, false, true},
    {"q5_0", 32, 22, false, true},
    {"q5_1", 32, 24, false, true},
    {"q8_0", 32, 34, false, true},
    {"q8_1", 32, 36, false, true},
    {"q2_k", 256, 84, false, true},
    {"q3_k", 256, 110, false, true},
    {"q4_k", 256, 144, false, true},
    {"q5_k", 256, 176, false, true},
    {"q6_k", 256, 210, false, true},
    {"q8_k", 256, 292, false, true},
    {"iq4_nl", 32, 18, false, true},
    {"iq4_xs", 256, 136, false, true},
    {"i8z32", 32, 35, false, true},
    {"i4z32", 32, 19, false, true},
    {"w8a8", 32, 34, false, true},
}};

struct NamedType {
  std::string_view name;
  DType type;
};
constexpr NamedType kSafetensorsNames[] = {
    {"F32", DType::kF32},   {"F16", DType::kF16},         {"BF16", DType::kBF16},
    {"F64", DType::kF64},   {"F8_E4M3", DType::kF8E4M3},  {"F8_E5M2", DType::kF8E5M2},
    {"I8", DType::kI8},     {"U8", DType::kU8},           {"I16", DType::kI16},
    {"I32", DType::kI32},   {"I64", DType::kI64},         {"BOOL", DType::kBool},
};

struct GgmlType {
  uint32_t id;
  DType type;
};
// ggml_type enum values (ggml.h); 4 and 5 (Q4_2/Q4_3) were removed upstream.
constexpr GgmlType kGgmlTypes[] = {
    {0, DType::kF32},   {1, DType::kF16},   {2, DType::kQ4_0},  {3, DType::kQ4_1},
    {6, DType::kQ5_0},  {7, DType::kQ5_1},  {8, DType::kQ8_0},  {9, DType::kQ8_1},
    {10, DType::kQ2_K}, {11, DType::kQ3_K}, {12, DType::kQ4_K}, {13, DType::kQ5_K},
    {14, DType::kQ6_K}, {15, DType::kQ8_K}, {20, DType::kIQ4_NL}, {23, DType::kIQ4_XS},
    {24, DType::kI8},   {25, DType::kI16},
    {26, DType::kI32},  {27, DType::kI64},  {28, DType::kF64},  {30, DType::kBF16},
};

// ggml_type ids lemma does not read, by ggml's names (ggml.h).
constexpr struct {
  uint32_t id;
  std::string_view name;
} kUnreadGgmlTypes[] = {{16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {21, "IQ3_S"},
                        {22, "IQ2_S"},   {29, "IQ1_M"},  {34, "TQ1_0"},   {35, "TQ2_0"}};
}  // namespace

std::string_view unsupported_ggml_type_name(uint32_t ggml_type) {
  for (const auto& t : kUnreadGgmlTypes)
    if (t.id == ggml_type) return t.name;
  return {};
}

const DTypeInfo& dtype_info(DType type) { return kInfo[static_cast<size_t>(type)]; }

std::optional<uint64_t> dtype_bytes(DType type, uint64_t elements) {
  const auto& info = dtype_info(type);
  if (elements % info.block_elements != 0) return std::nullopt;
  const uint64_t blocks = elements / info.block_elements;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(info.block_bytes), &bytes)) return std::nullopt;
  return bytes;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& n : kSafetensorsNames)
    if (n.name == name) return n.type;
  return std::nullopt;
}

std::string_view dtype_to_safetensors(DType type) {
  for (const auto& n : kSafetensorsNames)
    if (n.type == type) return n.name;
  return {};
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  for (const auto& g : kGgmlTypes)
    if (g.id == ggml_type) return g.type;
  return std::nullopt;
}

std::optional<uint32_t> dtype_to_ggml(DType type) {
  for (const auto& g : kGgmlTypes)
    if (g.type == type) return g.id;
  return std::nullopt;
}

}  // namespace lemma
