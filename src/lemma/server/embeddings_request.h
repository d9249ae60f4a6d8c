// Parsing of OpenAI /v1/embeddings request bodies: `input` as a string, an array of strings, an
// array of token ids, or an array of such arrays (each one input); `encoding_format` float or
// base64. Every rejected value throws ApiError(400) naming the field. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace lemma::server {

struct ParsedEmbeddings {
  std::string model = {};  // empty: the served model
  // Each input: text to tokenise, or token ids as given.
  std::vector<std::variant<std::string, std::vector<int32_t>>> inputs = {};
  bool base64 = false;     // encoding_format "base64": little-endian float32 bytes, base64-encoded
  std::string user = {};
};

inline constexpr size_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

ParsedEmbeddings parse_embeddings_request(const std::string& body);

}  // namespace lemma::server
