#include "lemma/quant/runnable_weights.h"

#include <cstring>
#include <fstream>

#include "lemma/base/error.h"
#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/quant/quantized_safetensors.h"

namespace lemma::quant {

namespace {

constexpr int64_t kBlock = 32;

bool has_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

// The code of value `c` of row `row` as stored (lemma layout: int4 value 2k / 2k+1 in the low / high
// nibble of byte k; int8 sym codes are two's complement bytes, so the byte is returned as is).
uint8_t stored_code(const QuantizedWeight& w, int64_t row, int64_t c) {
  const uint8_t* q = w.qweight.data() + row * w.qweight_row_bytes();
  if (w.spec.bits == 8) return q[c];
  return static_cast<uint8_t>((q[c / 2] >> (4 * (c % 2))) & 0xF);
}

template <typename Block>
void put(std::vector<uint8_t>& out, int64_t b, const Block& block) {
  std::memcpy(out.data() + b * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
}

// Both int4 block layouts (Q4_0, i4z32): value j in the low nibble of byte j, j + 16 in the high one.
template <typename Block>
void pack_nibbles(const QuantizedWeight& w, int64_t row, int64_t first, Block& block) {
  for (int j = 0; j < 16; ++j) {
    block.qs[j] = static_cast<uint8_t>(stored_code(w, row, first + j) | (stored_code(w, row, first + j + 16) << 4));
  }
}

}  // namespace

DType served_dtype_for(const WeightQuantSpec& s) {
  if (s.int8_activations) return DType::kW8A8;
  if (s.symmetric) return s.bits == 8 ? DType::kQ8_0 : DType::kQ4_0;
  return s.bits == 8 ? DType::kI8Z32 : DType::kI4Z32;
}

std::vector<uint8_t> to_runtime_blocks(const QuantizedWeight& w) {
  if (w.cols % kBlock != 0) fail<InvalidArgument>("rows of {} values are not whole blocks of {}", w.cols, kBlock);
  const DType type = served_dtype_for(w.spec);
  const int64_t per_row = w.cols / kBlock;
  const int64_t group = w.spec.group_for(w.cols);
  const int64_t groups = w.groups_per_row();
  std::vector<uint8_t> out(*dtype_bytes(type, static_cast<uint64_t>(w.rows * w.cols)));
  for (int64_t row = 0; row < w.rows; ++row) {
    for (int64_t i = 0; i < per_row; ++i) {
      const int64_t b = row * per_row + i, first = i * kBlock;
      const auto g = static_cast<size_t>(row * groups + first / group);
      const uint16_t d = w.scales[g];
      const uint8_t z = w.spec.symmetric ? 0 : w.zeros[g];
      if (type == DType::kQ8_0) {
        kernels::BlockQ8_0 block;
        block.d = d;
        for (int j = 0; j < kBlock; ++j) block.qs[j] = static_cast<int8_t>(stored_code(w, row, first + j));
        put(out, b, block);
      } else if (type == DType::kW8A8) {
        kernels::BlockW8A8 block;
        block.d = d;
        for (int j = 0; j < kBlock; ++j) {
          block.qs[j] = static_cast<uint8_t>(static_cast<int8_t>(stored_code(w, row, first + j)) + 128);
        }
        put(out, b, block);
      } else if (type == DType::kI8Z32) {
        kernels::BlockI8Z32 block;
        block.d = d;
        block.z = z;
        for (int j = 0; j < kBlock; ++j) block.qs[j] = stored_code(w, row, first + j);
        put(out, b, block);
      } else if (type == DType::kQ4_0) {  // both store q + 8
        kernels::BlockQ4_0 block;
        block.d = d;
        pack_nibbles(w, row, first, block);
        put(out, b, block);
      } else {
        kernels::BlockI4Z32 block;
        block.d = d;
        block.z = z;
        pack_nibbles(w, row, first, block);
        put(out, b, block);
      }
    }
  }
  return out;
}

std::vector<uint8_t> to_gguf_blocks(const QuantizedWeight& w) {
  if (!w.spec.symmetric || w.spec.int8_activations) {
    fail<InvalidArgument>("{} has no GGUF block twin", w.spec.to_string());
  }
  return to_runtime_blocks(w);
}

bool is_lemma_quantized_file(const std::string& path) {
  if (has_gguf_magic(path)) return GgufFile::open(path).get_string(std::string(kQuantFormatKey)).has_value();
  return SafetensorsFile::open(path).metadata().contains(std::string(kQuantFormatKey));
}

RunnableWeights RunnableWeights::open(const std::string& path, LoadMode mode) {
  RunnableWeights r;
  r.state_ = std::make_shared<State>();
  State& s = *r.state_;
  QuantizedContainer container;
  if (has_gguf_magic(path)) {
    s.gguf = GgufFile::open(path, mode);
    container = container_of(*s.gguf);
  } else {
    s.safetensors = SafetensorsFile::open(path, mode);
    container = container_of(*s.safetensors);
  }
  const auto spec = quantized_spec_of(container);
  if (!spec) fail<FormatError>("{}: no {} metadata: not a lemma quantized file", path, kQuantFormatKey);
  r.spec_ = *spec;
  r.served_ = served_dtype_for(*spec);
  for (const auto& base : quantized_weight_bases(container)) {
    const auto w = read_quantized_weight(container, base, *spec);
    const std::string name = base + ".weight";
    std::vector<uint8_t> bytes;
    DType served = r.served_;
    if (w.cols % kBlock == 0) {
      bytes = to_runtime_blocks(w);
    } else {
      served = DType::kF32;
      r.widened_.push_back(name);
      const auto values = dequantize_weight(w);
      bytes.resize(values.size() * sizeof(float));
      std::memcpy(bytes.data(), values.data(), bytes.size());
    }
    auto& stored = s.converted[name] = std::move(bytes);
    s.views[name] = TensorView{stored.data(), served, Shape{w.rows, w.cols}};
  }
  return r;
}

std::optional<TensorView> RunnableWeights::find(const std::string& name) const {
  if (const auto it = state_->views.find(name); it != state_->views.end()) return it->second;
  if (state_->safetensors) {
    if (const auto* t = state_->safetensors->tensor(name)) return t->view;
  } else if (const auto* t = state_->gguf->tensor(name)) {
    return t->view;
  }
  return std::nullopt;
}

}  // namespace lemma::quant
