// A lemma int8/int4 safetensors file as TensorViews lemma's matmul kernels consume, so a model can
// run it (Model::from_tensors with find() as the lookup). int8-g32-sym is re-laid out as GGUF Q8_0
// blocks and int4-g32-sym as Q4_0 blocks: both are lossless (same f16 scale, same codes), so the
// quantized kernels run the weights as stored. Other specs have no matching kernel yet and are
// dequantized to f32 at load (exact values, f32 memory). Unquantized tensors are served as stored.
// Move-only; find() is thread-safe; views live as long as owner().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemma/io/safetensors.h"
#include "lemma/quant/weight_format.h"

namespace lemma::quant {

class RunnableWeights {
 public:
  // Throws FormatError when the file is not a lemma-weight-v1 file or a tensor is malformed.
  static RunnableWeights open(const std::string& path);

  // "<base>.weight" of a quantized weight, or any unquantized tensor; nullopt when absent.
  std::optional<TensorView> find(const std::string& name) const;
  const WeightQuantSpec& spec() const { return spec_; }
  // The dtype quantized weights are served in (kQ8_0, kQ4_0 or kF32).
  DType served_dtype() const { return served_; }
  // Keeps the file and the converted buffers alive (hand to Model::from_tensors).
  std::shared_ptr<const void> owner() const { return state_; }

 private:
  struct State {
    SafetensorsFile file;
    std::map<std::string, std::vector<uint8_t>, std::less<>> converted;  // by "<base>.weight"
    std::map<std::string, TensorView, std::less<>> views;
  };
  WeightQuantSpec spec_;
  DType served_ = DType::kF32;
  std::shared_ptr<State> state_;
};

// The GGUF block bytes of a weight whose spec is int8-g32-sym (Q8_0) or int4-g32-sym (Q4_0);
// InvalidArgument for other specs.
std::vector<uint8_t> to_gguf_blocks(const QuantizedWeight& weight);

}  // namespace lemma::quant
