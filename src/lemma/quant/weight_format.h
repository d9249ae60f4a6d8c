// lemma's weight-only integer formats (int8 and int4; symmetric or asymmetric; one scale per group of
// 32/64/128 values along a row, or per output channel) and their reference quantizer/dequantizer.
// A matrix [rows, cols] becomes:
//   qweight  int8: I8 [rows, cols] (symmetric, q in -127..127) or U8 [rows, cols] (asymmetric, 0..255);
//            int4: U8 [rows, cols / 2], value 2k of a row in the low nibble of byte k, 2k + 1 in the
//            high nibble; nibbles are q + 8 (symmetric, q in -8..7) or q (asymmetric, 0..15)
//   scales   F16 [rows, cols / group]
//   zeros    U8  [rows, cols / group] (asymmetric only; integer zero points)
// value = scale * q (symmetric) or scale * (q - zero) (asymmetric). Plain data; functions are pure
// and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lemma::quant {

struct WeightQuantSpec {
  int bits = 8;            // 8 or 4
  bool symmetric = true;   // false: integer zero point per group
  int64_t group_size = 0;  // 32, 64 or 128; 0 = one group per row (per channel)
  // W8A8 ("w8a8"): int8 per-channel symmetric weights whose matmul quantises the activations to
  // int8 per token at run time (kernels/lemma_int_blocks.h). Rows must be whole 32-value blocks
  // and at most 65536 long (the int32 sums stay exact).
  bool int8_activations = false;

  int64_t group_for(int64_t cols) const { return group_size == 0 ? cols : group_size; }
  // Code range: int8 -127..127 / int4 -8..7 (symmetric), 0..255 / 0..15 (asymmetric).
  int min_code() const;
  int max_code() const;
  // "int4-g128-asym", "int8-channel-sym", "w8a8".
  std::string to_string() const;
  bool operator==(const WeightQuantSpec&) const = default;
};

// Parses "int8", "int4", optionally followed by "-g32|-g64|-g128|-channel" and "-sym|-asym" in that
// order (defaults: int8 per channel symmetric, int4 g128 symmetric), or "w8a8"; nullopt otherwise.
std::optional<WeightQuantSpec> parse_weight_quant_spec(std::string_view text);
// Throws InvalidArgument unless bits is 4/8 and group_size is 0/32/64/128 (W8A8: 8, 0, symmetric).
void validate(const WeightQuantSpec& spec);
// Whether a [rows, cols] matrix can take the format: cols a multiple of the group (and even for int4;
// W8A8: a multiple of 32, at most 65536).
bool fits(const WeightQuantSpec& spec, int64_t cols);

struct QuantizedWeight {
  WeightQuantSpec spec;
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> qweight;  // layout above (int8 codes stored as their byte pattern)
  std::vector<uint16_t> scales;  // f16 bits, [rows, groups]
  std::vector<uint8_t> zeros;    // [rows, groups]; empty when symmetric

  int64_t groups_per_row() const { return cols / spec.group_for(cols); }
  int64_t qweight_row_bytes() const { return spec.bits == 8 ? cols : cols / 2; }
  uint64_t bytes() const { return qweight.size() + 2 * scales.size() + zeros.size(); }
};

// Quantizes a row-major [rows, cols] f32 matrix. Per group: int8 symmetric scale = max|x| / 127;
// int4 symmetric scale = m / -8 with m the value of largest magnitude (sign kept, so all 16 codes
// are used, as GGUF Q4_0 does); asymmetric: for the range [t min(x, 0), t max(x, 0)] with
// t = 1, 0.98, ..., 0.70, scale = range / (255 or 15) and zero = round(-t min(x, 0) / scale), keeping
// the t with the smallest squared error of the group (the first on ties). Scales are rounded to f16
// first and the codes computed with the rounded scale (round half to even, clamped). Throws InvalidArgument when
// !fits(spec, cols) or a scale overflows f16.
QuantizedWeight quantize_weight(std::span<const float> values, int64_t rows, int64_t cols,
                                const WeightQuantSpec& spec);
// quantize_weight's rule one group and one value at a time, for quantizers that choose codes in
// their own order (GPTQ, gptq.h): a group's scale (f16-rounded; the int4 symmetric one is negative
// when the group's largest magnitude is positive: m / -8) and zero point (0 when symmetric) from its
// values; a value's code under them and the code's value.
struct WeightGroupRounding {
  float scale = 0.0f;
  int zero = 0;
  int code(float x, const WeightQuantSpec& spec) const;
  float value(int code) const { return scale * static_cast<float>(code - zero); }
};
WeightGroupRounding weight_group_rounding(std::span<const float> group, const WeightQuantSpec& spec);
// A [rows, cols] weight with zero codes and scales (throws as quantize_weight for a spec or row
// length that does not fit), and writers of one group's parameters and one code.
QuantizedWeight empty_quantized_weight(int64_t rows, int64_t cols, const WeightQuantSpec& spec);
void set_group(QuantizedWeight& weight, int64_t row, int64_t group, const WeightGroupRounding& rounding);
void set_code(QuantizedWeight& weight, int64_t row, int64_t col, int code);

// The reference dequantizer: row `row` into `out` ([cols]).
void dequantize_weight_row(const QuantizedWeight& weight, int64_t row, float* out);
std::vector<float> dequantize_weight(const QuantizedWeight& weight);

}  // namespace lemma::quant
