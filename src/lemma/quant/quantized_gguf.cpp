#include "lemma/quant/quantized_gguf.h"

namespace lemma::quant {

GgufWriter quantized_gguf(const GgufFile& source, const QuantizedCheckpoint& checkpoint) {
  GgufWriter writer;
  for (const auto& [key, value] : source.metadata()) {
    if (!checkpoint.metadata.contains(key)) writer.set(value);
  }
  for (const auto& [key, value] : checkpoint.metadata) writer.set_string(key, value);
  for (const auto& t : checkpoint.tensors) {
    TensorView view = t.view;
    if (view.dtype == DType::kU8) view.dtype = DType::kI8;
    writer.add_tensor(t.name, view);
  }
  return writer;
}

}  // namespace lemma::quant
