// lemma's int8/int4/W8A8 weights in a GGUF container, for GGUF inputs (`lemma quantize --model
// x.gguf --out y.gguf --type int4`): the source's metadata (so the file keeps its architecture and
// tokenizer), lemma.quant.format / lemma.quant.spec as strings, and the tensors of
// quantized_safetensors.h under the same names; U8 tensors are stored as GGUF I8 (same bytes: GGUF
// has no U8 type). RunnableWeights and Model::open read it back. Not thread-safe.
#pragma once

#include "lemma/io/gguf.h"
#include "lemma/io/gguf_writer.h"
#include "lemma/quant/weight_quantizer.h"

namespace lemma::quant {

// The writer's views point into `checkpoint` and `source`: both must outlive it.
GgufWriter quantized_gguf(const GgufFile& source, const QuantizedCheckpoint& checkpoint);

}  // namespace lemma::quant
