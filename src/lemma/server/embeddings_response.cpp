#include "lemma/server/embeddings_response.h"

#include <cmath>
#include <cstring>

namespace lemma::server {

void normalize_l2(std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) sum += double(x) * double(x);
  if (sum <= 0.0) return;
  const double scale = 1.0 / std::sqrt(sum);
  for (float& x : v) x = float(double(x) * scale);
}

std::string base64_floats(std::span<const float> v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());  // x86-64: little-endian already
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t triple = 0;
    for (size_t k = 0; k < 3; ++k) triple = (triple << 8) | (k < n ? uint8_t(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(triple >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

ojson embeddings_json(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                      int64_t prompt_tokens) {
  ojson data = ojson::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    ojson e{{"object", "embedding"}, {"index", i}};
    e["embedding"] = base64 ? ojson(base64_floats(vectors[i])) : ojson(vectors[i]);
    data.push_back(std::move(e));
  }
  return ojson{{"object", "list"},
               {"data", std::move(data)},
               {"model", model},
               {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace lemma::server
