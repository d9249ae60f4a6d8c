#include "lemma/bench/serving/target_url.h"

#include <algorithm>
#include <cctype>

#include "lemma/base/error.h"

namespace lemma::bench::serving {

TargetUrl parse_target_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    throw InvalidArgument("--url must start with http:// (https is not supported), got \"" + url + "\"");
  }
  std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0) path.resize(path.size() - 3);
  TargetUrl t;
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    t.port = authority.substr(colon + 1);
    authority.resize(colon);
    const bool digits = !t.port.empty() && std::all_of(t.port.begin(), t.port.end(), [](unsigned char c) { return std::isdigit(c); });
    if (!digits || t.port.size() > 5 || std::stoi(t.port) > 65535) {
      throw InvalidArgument("--url has a bad port in \"" + url + "\"");
    }
  }
  if (authority.size() > 2 && authority.front() == '[' && authority.back() == ']') authority = authority.substr(1, authority.size() - 2);
  if (authority.empty()) throw InvalidArgument("--url has no host: \"" + url + "\"");
  t.host = authority;
  t.base_path = path;
  return t;
}

}  // namespace lemma::bench::serving
