// Quantizes a GGUF model into a GGUF file with Q8_0/Q4_0 tensors, following llama-quantize's
// default recipe where lemma has the types: 1-D tensors, tensors not named "*weight" and MoE routers
// (ffn_gate_inp.weight) are kept; stacked MoE experts (ffn_*_exps, [E, rows, cols]) are quantized row by row;
// the output matrix (token_embd when there is none) becomes Q8_0 under Q4_0 (llama.cpp picks Q6_K
// when its row length is a multiple of 256 and Q8_0 otherwise; lemma has no Q6_K quantizer);
// tensors whose row length is not a multiple of 32 keep their type. `--tensor-type REGEX=TYPE`
// overrides come first (std::regex_search on the name, first match wins; TYPE q8_0, q4_0 or f32).
// Metadata is copied, general.quantization_version (2) and general.file_type appended last as
// llama-quantize does (an existing key is moved to the end), and tensors are written in llama-quantize's order (its loader's name
// order: tensors outside the layers first, then blk.N by layer; by name within each), so for the
// same input and types the file equals llama-quantize's byte for byte. Not thread-safe (builds one
// writer).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lemma/io/gguf.h"
#include "lemma/io/gguf_writer.h"
#include "lemma/tensor/dtype.h"

namespace lemma::quant {

struct TensorTypeOverride {
  std::string pattern;  // ECMAScript regex, searched in the tensor name
  DType type;           // kQ8_0, kQ4_0 or kF32
};

struct GgufQuantizeOptions {
  DType type = DType::kQ8_0;  // kQ8_0 or kQ4_0
  std::vector<TensorTypeOverride> overrides;
};

struct TensorPlan {
  std::string name;
  DType from;
  DType to;
  std::string reason;  // why `to` (recipe rule, override, or why the tensor stays wider)
};

// Parses "REGEX=TYPE"; throws InvalidArgument for a bad regex or type.
TensorTypeOverride parse_tensor_type_override(const std::string& text);

// One entry per tensor, in the input file's order. Throws InvalidArgument for an unsupported target type.
std::vector<TensorPlan> plan_gguf_quantization(const GgufFile& file, const GgufQuantizeOptions& options);

// Indices into file.tensors() in llama-quantize's output order.
std::vector<size_t> llama_quantize_order(const GgufFile& file);

// Called after each tensor, in output order: (index, count, plan, bytes before, bytes after).
using QuantizeProgress = std::function<void(size_t, size_t, const TensorPlan&, uint64_t, uint64_t)>;

// Builds the quantized file; write it with GgufWriter::write.
GgufWriter quantize_gguf(const GgufFile& file, const GgufQuantizeOptions& options,
                         const QuantizeProgress& progress = {});

// llama.cpp's general.file_type for an all-<type> model (LLAMA_FTYPE_MOSTLY_Q8_0 = 7, _Q4_0 = 2).
uint32_t llama_file_type(DType type);

}  // namespace lemma::quant
