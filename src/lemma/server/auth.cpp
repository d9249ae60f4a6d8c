#include "lemma/server/auth.h"

#include <cctype>
#include <string_view>

namespace lemma::server {

namespace {
// Constant time over the key's length, whatever the token.
bool same_key(std::string_view token, const std::string& api_key) {
  unsigned char diff = token.size() == api_key.size() ? 0 : 1;
  for (size_t i = 0; i < api_key.size(); ++i) {
    diff |= static_cast<unsigned char>((i < token.size() ? token[i] : 0) ^ api_key[i]);
  }
  return diff == 0;
}

bool bearer_matches(const std::string& header, const std::string& api_key) {
  // RFC 7235: `Bearer` is case-insensitive and followed by one or more spaces. (Duplicate
  // Authorization headers never get here: the session refuses them first.)
  const std::string scheme = "bearer";
  if (header.size() <= scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i]) return false;
  }
  size_t start = scheme.size();
  if (header[start] != ' ') return false;
  while (start < header.size() && header[start] == ' ') ++start;
  return same_key(std::string_view(header.data() + start, header.size() - start), api_key);
}
}  // namespace

bool is_authorized(const HttpRequest& request, const std::string& api_key) {
  if (api_key.empty()) return true;
  if (bearer_matches(request.header("authorization"), api_key)) return true;
  const auto x_api_key = request.headers.find("x-api-key");
  return x_api_key != request.headers.end() && same_key(x_api_key->second, api_key);
}

}  // namespace lemma::server
