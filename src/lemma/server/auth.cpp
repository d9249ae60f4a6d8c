#include "lemma/server/auth.h"

namespace lemma::server {

bool is_authorized(const HttpRequest& request, const std::string& api_key) {
  if (api_key.empty()) return true;
  const std::string header = request.header("authorization");
  const std::string prefix = "Bearer ";
  if (header.size() != prefix.size() + api_key.size() || header.compare(0, prefix.size(), prefix) != 0) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < api_key.size(); ++i) diff |= static_cast<unsigned char>(header[prefix.size() + i] ^ api_key[i]);
  return diff == 0;
}

}  // namespace lemma::server
