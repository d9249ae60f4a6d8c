#include "lemma/quant/runnable_weights.h"

#include <cstring>

#include "lemma/base/error.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/quant/quantized_safetensors.h"

namespace lemma::quant {

namespace {

bool is_q8_0_layout(const WeightQuantSpec& s) { return s.bits == 8 && s.symmetric && s.group_size == 32; }
bool is_q4_0_layout(const WeightQuantSpec& s) { return s.bits == 4 && s.symmetric && s.group_size == 32; }

}  // namespace

std::vector<uint8_t> to_gguf_blocks(const QuantizedWeight& w) {
  const bool q8 = is_q8_0_layout(w.spec);
  if (!q8 && !is_q4_0_layout(w.spec)) fail<InvalidArgument>("{} has no GGUF block twin", w.spec.to_string());
  const int64_t blocks = w.rows * (w.cols / 32);
  std::vector<uint8_t> out(static_cast<size_t>(blocks) * (q8 ? sizeof(kernels::BlockQ8_0) : sizeof(kernels::BlockQ4_0)));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t row = b / (w.cols / 32), first = (b % (w.cols / 32)) * 32;
    const uint8_t* q = w.qweight.data() + row * w.qweight_row_bytes();
    if (q8) {
      kernels::BlockQ8_0 block;
      block.d = w.scales[static_cast<size_t>(b)];
      std::memcpy(block.qs, q + first, 32);  // int8 codes, same bytes
      std::memcpy(out.data() + b * sizeof(block), &block, sizeof(block));
    } else {
      // lemma: value 2k / 2k+1 in the low / high nibble of byte k; Q4_0: value j / j+16 in the
      // low / high nibble of byte j. Both store q + 8.
      auto nibble = [&](int64_t c) { return static_cast<uint8_t>((q[c / 2] >> (4 * (c % 2))) & 0xF); };
      kernels::BlockQ4_0 block;
      block.d = w.scales[static_cast<size_t>(b)];
      for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(nibble(first + j) | (nibble(first + j + 16) << 4));
      std::memcpy(out.data() + b * sizeof(block), &block, sizeof(block));
    }
  }
  return out;
}

RunnableWeights RunnableWeights::open(const std::string& path) {
  RunnableWeights r;
  r.state_ = std::make_shared<State>(State{SafetensorsFile::open(path), {}, {}});
  State& s = *r.state_;
  const auto spec = quantized_spec_of(s.file);
  if (!spec) fail<FormatError>("{}: no {} metadata: not a lemma quantized file", path, kQuantFormatKey);
  r.spec_ = *spec;
  r.served_ = is_q8_0_layout(*spec) ? DType::kQ8_0 : is_q4_0_layout(*spec) ? DType::kQ4_0 : DType::kF32;
  for (const auto& base : quantized_weight_bases(s.file)) {
    const auto w = read_quantized_weight(s.file, base, *spec);
    std::vector<uint8_t> bytes;
    if (r.served_ == DType::kF32) {
      const auto values = dequantize_weight(w);
      bytes.resize(values.size() * sizeof(float));
      std::memcpy(bytes.data(), values.data(), bytes.size());
    } else {
      bytes = to_gguf_blocks(w);
    }
    const std::string name = base + ".weight";
    auto& stored = s.converted[name] = std::move(bytes);
    s.views[name] = TensorView{stored.data(), r.served_, Shape{w.rows, w.cols}};
  }
  return r;
}

std::optional<TensorView> RunnableWeights::find(const std::string& name) const {
  if (const auto it = state_->views.find(name); it != state_->views.end()) return it->second;
  if (const auto* t = state_->file.tensor(name)) return t->view;
  return std::nullopt;
}

}  // namespace lemma::quant
