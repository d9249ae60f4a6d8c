// A lemma int8/int4/W8A8 file (safetensors, or the GGUF `lemma quantize` writes for a GGUF input)
// as TensorViews lemma's matmul kernels consume, so a model runs it (Model::open does this when a
// file declares lemma.quant.format; Model::from_tensors with find() as the lookup otherwise).
// Each quantized weight is re-laid out once, losslessly (same f16 scales, same codes), into blocks
// of 32 values the kernels read directly (kernels/lemma_int_blocks.h):
//   symmetric int8 -> GGUF Q8_0, symmetric int4 -> GGUF Q4_0, asymmetric int8 -> i8z32,
//   asymmetric int4 -> i4z32, w8a8 -> w8a8 (int8 activations per token at run time);
// a group of 64/128 values or a whole row (per channel) repeats its scale (and zero) in each of its
// 32-value blocks. A weight whose rows are not whole 32-value blocks is served in f32 (its exact
// dequantized values; widened() lists them). Unquantized tensors are served as stored.
// Move-only; find() is thread-safe; views live as long as owner().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemma/base/mapped_file.h"
#include "lemma/io/gguf.h"
#include "lemma/io/safetensors.h"
#include "lemma/quant/weight_format.h"

namespace lemma::quant {

class RunnableWeights {
 public:
  // A .gguf (GGUF magic) or safetensors file. Throws FormatError when it is not a lemma-weight-v1
  // file or a tensor is malformed.
  static RunnableWeights open(const std::string& path, LoadMode mode = LoadMode::kLazyMmap);

  // "<base>.weight" of a quantized weight, or any unquantized tensor; nullopt when absent.
  std::optional<TensorView> find(const std::string& name) const;
  const WeightQuantSpec& spec() const { return spec_; }
  // The dtype quantized weights with whole 32-value blocks are served in (served_dtype_for(spec)).
  DType served_dtype() const { return served_; }
  // "<base>.weight" names of the quantized weights served in f32 instead (rows not whole blocks).
  const std::vector<std::string>& widened() const { return widened_; }
  // Keeps the file and the converted buffers alive (hand to Model::from_tensors).
  std::shared_ptr<const void> owner() const { return state_; }

 private:
  struct State {
    std::optional<SafetensorsFile> safetensors;
    std::optional<GgufFile> gguf;
    std::map<std::string, std::vector<uint8_t>, std::less<>> converted;  // by "<base>.weight"
    std::map<std::string, TensorView, std::less<>> views;
  };
  WeightQuantSpec spec_;
  DType served_ = DType::kF32;
  std::vector<std::string> widened_;
  std::shared_ptr<State> state_;
};

// Whether `path` is a GGUF or safetensors file that declares lemma.quant.format (reads the header).
bool is_lemma_quantized_file(const std::string& path);

// The block dtype a spec's weights run as (see above).
DType served_dtype_for(const WeightQuantSpec& spec);
// A weight's bytes as [rows, cols / 32] blocks of served_dtype_for(spec); InvalidArgument when cols
// is not a multiple of 32.
std::vector<uint8_t> to_runtime_blocks(const QuantizedWeight& weight);
// The GGUF Q8_0 / Q4_0 bytes of a symmetric int8 / int4 weight (any group); InvalidArgument for
// asymmetric or W8A8 specs.
std::vector<uint8_t> to_gguf_blocks(const QuantizedWeight& weight);

}  // namespace lemma::quant
