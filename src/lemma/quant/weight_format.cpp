#include "lemma/quant/weight_format.h"

#include <algorithm>
#include <cmath>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"

namespace lemma::quant {

int WeightQuantSpec::max_code() const {
  if (symmetric) return bits == 8 ? 127 : 7;
  return bits == 8 ? 255 : 15;
}

int WeightQuantSpec::min_code() const {
  if (symmetric) return bits == 8 ? -127 : -8;
  return 0;
}

std::string WeightQuantSpec::to_string() const {
  if (int8_activations) return "w8a8";
  return "int" + std::to_string(bits) + (group_size == 0 ? "-channel" : "-g" + std::to_string(group_size)) +
         (symmetric ? "-sym" : "-asym");
}

std::optional<WeightQuantSpec> parse_weight_quant_spec(std::string_view text) {
  WeightQuantSpec spec;
  if (text == "w8a8") {
    spec.int8_activations = true;
    return spec;  // int8, per channel, symmetric
  }
  if (text.starts_with("int8")) {
    spec.bits = 8;
  } else if (text.starts_with("int4")) {
    spec.bits = 4;
    spec.group_size = 128;
  } else {
    return std::nullopt;
  }
  text.remove_prefix(4);
  auto take = [&text](std::string_view part) {
    if (!text.starts_with(part)) return false;
    text.remove_prefix(part.size());
    return true;
  };
  if (take("-channel")) spec.group_size = 0;
  else if (take("-g32")) spec.group_size = 32;
  else if (take("-g64")) spec.group_size = 64;
  else if (take("-g128")) spec.group_size = 128;
  if (take("-asym")) spec.symmetric = false;
  else take("-sym");
  if (!text.empty()) return std::nullopt;
  return spec;
}

void validate(const WeightQuantSpec& spec) {
  if (spec.bits != 8 && spec.bits != 4) fail<InvalidArgument>("weight quantization bits must be 8 or 4, not {}", spec.bits);
  const int64_t g = spec.group_size;
  if (g != 0 && g != 32 && g != 64 && g != 128) {
    fail<InvalidArgument>("weight quantization group size must be 32, 64, 128 or 0 (per channel), not {}", g);
  }
  if (spec.int8_activations && (spec.bits != 8 || g != 0 || !spec.symmetric)) {
    fail<InvalidArgument>("w8a8 weights are int8, per channel, symmetric (got {} bits, group {}, {})", spec.bits, g,
                          spec.symmetric ? "sym" : "asym");
  }
}

bool fits(const WeightQuantSpec& spec, int64_t cols) {
  if (spec.int8_activations) return cols > 0 && cols % 32 == 0 && cols <= 65536;
  const int64_t group = spec.group_for(cols);
  return cols > 0 && cols % group == 0 && (spec.bits == 8 || group % 2 == 0);
}

namespace {

// Asymmetric scale and zero for the range [t lo, t hi]: scale rounded to f16, integer zero.
WeightGroupRounding asymmetric_params(float lo, float hi, float t, int max_code) {
  const float raw_scale = (t * hi - t * lo) / static_cast<float>(max_code);
  const float scale = kernels::f16_to_f32(kernels::f32_to_f16(raw_scale));
  if (!std::isfinite(scale)) fail<InvalidArgument>("weight quantization scale {} does not fit in f16", raw_scale);
  const int zero = scale == 0.0f ? 0 : std::clamp(static_cast<int>(std::nearbyint(-t * lo / scale)), 0, max_code);
  return {scale, zero};
}

// Sum over the group of (rms + |x|) * (x - dequantized x)^2.
double weighted_squared_error(const float* x, int64_t n, const WeightGroupRounding& p, int max_code) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const double rms = n > 0 ? std::sqrt(sum_sq / static_cast<double>(n)) : 0.0;
  double e = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const int q = std::clamp(static_cast<int>(std::nearbyint(x[i] / p.scale)) + p.zero, 0, max_code);
    const double d = static_cast<double>(p.scale * static_cast<float>(q - p.zero)) - x[i];
    e += (rms + std::fabs(x[i])) * d * d;
  }
  return e;
}

// Asymmetric groups: the plain min/max range leaves each extreme up to half a step off (the zero
// point is rounded to an integer), and on stories260K that cost int4-g32 +7.5% perplexity although
// its mean error is below Q4_0's. So the range [t min, t max] is searched for t = 1, 0.98, ..., 0.70
// for the smallest error of the group, each value's squared error weighted by rms(group) + |x| as
// llama.cpp's K-quant search weighs it (large weights matter more; a plain squared error made the
// per-channel format worse, +6.6%, while helping the grouped ones). The first t with the smallest
// error wins, so t = 1 on ties. Perplexity figures in quant/README.md.
WeightGroupRounding search_asymmetric_params(const float* x, int64_t n, float lo, float hi, int max_code) {
  WeightGroupRounding best = asymmetric_params(lo, hi, 1.0f, max_code);
  if (best.scale == 0.0f) return best;
  double best_error = weighted_squared_error(x, n, best, max_code);
  for (int i = 1; i < 16; ++i) {
    const WeightGroupRounding p = asymmetric_params(lo, hi, 1.0f - 0.02f * static_cast<float>(i), max_code);
    if (p.scale == 0.0f) break;
    const double e = weighted_squared_error(x, n, p, max_code);
    if (e < best_error) {
      best = p;
      best_error = e;
    }
  }
  return best;
}

}  // namespace

WeightGroupRounding weight_group_rounding(std::span<const float> group, const WeightQuantSpec& spec) {
  const float* x = group.data();
  const auto n = static_cast<int64_t>(group.size());
  float lo = 0.0f, hi = 0.0f, amax = 0.0f, signed_max = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      signed_max = x[i];
    }
  }
  if (!spec.symmetric) return search_asymmetric_params(x, n, lo, hi, spec.max_code());
  // int8: max|x| / 127; int4: the largest magnitude lands exactly on code -8.
  const float raw_scale = spec.bits == 8 ? amax / 127.0f : signed_max / -8.0f;
  const float scale = kernels::f16_to_f32(kernels::f32_to_f16(raw_scale));
  if (!std::isfinite(scale)) fail<InvalidArgument>("weight quantization scale {} does not fit in f16", raw_scale);
  return {scale, 0};
}

int WeightGroupRounding::code(float x, const WeightQuantSpec& spec) const {
  if (scale == 0.0f) return spec.symmetric ? 0 : zero;
  const int q = static_cast<int>(std::nearbyint(x / scale));
  if (spec.symmetric) return std::clamp(q, spec.min_code(), spec.max_code());
  return std::clamp(q + zero, 0, spec.max_code());
}

namespace {

// The stored unsigned nibble/byte for code q.
uint8_t stored_of(int q, const WeightQuantSpec& spec) {
  if (spec.bits == 4 && spec.symmetric) return static_cast<uint8_t>(q + 8);
  return static_cast<uint8_t>(q);  // int8 symmetric: two's complement byte of q
}

int code_from_stored(uint8_t s, const WeightQuantSpec& spec) {
  if (spec.bits == 8) return spec.symmetric ? static_cast<int>(static_cast<int8_t>(s)) : static_cast<int>(s);
  return spec.symmetric ? static_cast<int>(s) - 8 : static_cast<int>(s);
}

}  // namespace

QuantizedWeight empty_quantized_weight(int64_t rows, int64_t cols, const WeightQuantSpec& spec) {
  validate(spec);
  if (!fits(spec, cols)) fail<InvalidArgument>("row length {} does not fit {}", cols, spec.to_string());
  QuantizedWeight w;
  w.spec = spec;
  w.rows = rows;
  w.cols = cols;
  const int64_t groups = w.groups_per_row();
  w.qweight.assign(static_cast<size_t>(rows * w.qweight_row_bytes()), 0);
  w.scales.resize(static_cast<size_t>(rows * groups));
  if (!spec.symmetric) w.zeros.resize(static_cast<size_t>(rows * groups));
  return w;
}

void set_group(QuantizedWeight& w, int64_t row, int64_t group, const WeightGroupRounding& p) {
  const auto gi = static_cast<size_t>(row * w.groups_per_row() + group);
  w.scales[gi] = kernels::f32_to_f16(p.scale);
  if (!w.spec.symmetric) w.zeros[gi] = static_cast<uint8_t>(p.zero);
}

void set_code(QuantizedWeight& w, int64_t row, int64_t col, int code) {
  uint8_t* qrow = w.qweight.data() + row * w.qweight_row_bytes();
  const uint8_t s = stored_of(code, w.spec);
  if (w.spec.bits == 8) {
    qrow[col] = s;
  } else {
    uint8_t& byte = qrow[col / 2];
    byte = static_cast<uint8_t>(col % 2 == 0 ? (byte & 0xF0) | s : (byte & 0x0F) | s << 4);
  }
}

QuantizedWeight quantize_weight(std::span<const float> values, int64_t rows, int64_t cols,
                                const WeightQuantSpec& spec) {
  validate(spec);
  if (!fits(spec, cols)) fail<InvalidArgument>("row length {} does not fit {}", cols, spec.to_string());
  if (static_cast<int64_t>(values.size()) != rows * cols) {
    fail<InvalidArgument>("{} values given for a [{}, {}] matrix", values.size(), rows, cols);
  }
  QuantizedWeight w = empty_quantized_weight(rows, cols, spec);
  const int64_t group = spec.group_for(cols);
  const int64_t groups = cols / group;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* x = values.data() + r * cols + g * group;
      const WeightGroupRounding p = weight_group_rounding({x, static_cast<size_t>(group)}, spec);
      set_group(w, r, g, p);
      for (int64_t i = 0; i < group; ++i) set_code(w, r, g * group + i, p.code(x[i], spec));
    }
  }
  return w;
}

void dequantize_weight_row(const QuantizedWeight& w, int64_t row, float* out) {
  const int64_t group = w.spec.group_for(w.cols);
  const int64_t groups = w.cols / group;
  const uint8_t* qrow = w.qweight.data() + row * w.qweight_row_bytes();
  for (int64_t c = 0; c < w.cols; ++c) {
    const size_t gi = static_cast<size_t>(row * groups + c / group);
    const float scale = kernels::f16_to_f32(w.scales[gi]);
    const uint8_t s = w.spec.bits == 8 ? qrow[c] : static_cast<uint8_t>((qrow[c / 2] >> (4 * (c % 2))) & 0xF);
    const int zero = w.spec.symmetric ? 0 : w.zeros[gi];
    out[c] = scale * static_cast<float>(code_from_stored(s, w.spec) - zero);
  }
}

std::vector<float> dequantize_weight(const QuantizedWeight& w) {
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) dequantize_weight_row(w, r, out.data() + r * w.cols);
  return out;
}

}  // namespace lemma::quant
