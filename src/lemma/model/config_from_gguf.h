// Reading a ModelConfig from GGUF metadata (llama.cpp keys "<arch>.embedding_length", ...), plus
// the two things GGUF expresses with tensors: tied embeddings (no output.weight) and Llama-3 RoPE
// frequency divisors (rope_freqs.weight). Thread-safe (pure function of the file).
#pragma once

#include "lemma/io/gguf.h"
#include "lemma/model/model_config.h"

namespace lemma {

// Throws Unsupported for unknown general.architecture or unknown rope scaling types,
// FormatError for missing required keys. RoPE layout follows the arch (llama: interleaved,
// because llama.cpp permutes q/k rows at conversion; qwen2/qwen3: half-split).
ModelConfig config_from_gguf(const GgufFile& file);

}  // namespace lemma
