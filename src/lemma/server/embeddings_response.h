// OpenAI /v1/embeddings output: L2 normalisation, the float or base64 encoding of a vector, and the
// list body with usage. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lemma/server/response_format.h"

namespace lemma::server {

// Scales `v` to unit L2 norm (an all-zero vector stays zero).
void normalize_l2(std::vector<float>& v);
// The little-endian float32 bytes of `v`, base64-encoded (RFC 4648, padded), as OpenAI's clients decode it.
std::string base64_floats(std::span<const float> v);
// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}.
ojson embeddings_json(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                      int64_t prompt_tokens);

}  // namespace lemma::server
