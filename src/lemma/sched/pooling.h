// Pooling: how an embedding request reduces the model's final hidden states (the final norm's
// output, what the LM head reads) over its prompt tokens to one vector. A pooling request computes
// its whole prompt (it never reads the prefix cache), samples one token that is discarded, and
// carries the pooled vector, unnormalised, on its final output. Plain enum.
#pragma once

namespace lemma {

enum class Pooling {
  kNone,  // a generation request
  kLast,  // the last prompt token's row (decoder embedding models: E5-Mistral, Qwen3-Embedding)
  kMean,  // the mean of every prompt token's row
};

}  // namespace lemma
