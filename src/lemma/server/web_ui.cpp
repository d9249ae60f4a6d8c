#include "lemma/server/web_ui.h"

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "lemma/server/api_error.h"
#include "lemma/server/web_assets.h"

namespace lemma::server {

namespace {

// Only the page's own files run: no inline script or handler, no other origin. Model output is put
// in the page as text (webui/markdown.js), and this stops an injected handler should one slip by.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct Asset {
  const EmbeddedFile* file = nullptr;
  std::string etag = {};  // quoted FNV-1a 64 of the bytes
};

std::string etag_of(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("\"{:016x}-{}\"", h, bytes.size());
}

const std::vector<Asset>& assets() {
  static const std::vector<Asset> table = [] {
    std::vector<Asset> t;
    for (const EmbeddedFile& f : embedded_web_files()) t.push_back(Asset{&f, etag_of(f.bytes)});
    return t;
  }();
  return table;
}

const Asset* find_asset(const std::string& path) {
  if (path.empty() || path[0] != '/') return nullptr;
  const std::string_view name = path == "/" ? std::string_view("index.html") : std::string_view(path).substr(1);
  for (const Asset& a : assets())
    if (a.file->name == name) return &a;
  return nullptr;
}

// If-None-Match: a list of entity tags, or "*".
bool etag_matches(const std::string& if_none_match, const std::string& etag) {
  if (if_none_match.empty()) return false;
  if (if_none_match.find('*') != std::string::npos) return true;
  return if_none_match.find(etag) != std::string::npos;
}

}  // namespace

std::string web_content_type(std::string_view file_name) {
  auto ends_with = [&](std::string_view suffix) {
    return file_name.size() >= suffix.size() && file_name.substr(file_name.size() - suffix.size()) == suffix;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".svg")) return "image/svg+xml";
  if (ends_with(".json")) return "application/json";
  return "application/octet-stream";
}

std::optional<HttpResponse> web_ui_response(const HttpRequest& request) {
  const Asset* asset = find_asset(request.target);
  if (asset == nullptr) return std::nullopt;
  HttpResponse r;
  if (request.method != "GET" && request.method != "HEAD") {
    r = HttpResponse{405, "application/json",
                     ApiError(405, "method " + request.method + " is not allowed on " + request.target + "; use GET",
                              std::nullopt, "method_not_allowed").body(), {}};
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  r.content_type = web_content_type(asset->file->name);
  r.headers.emplace_back("ETag", asset->etag);
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (asset->file->name == "index.html") {
    r.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
  }
  if (etag_matches(request.header("if-none-match"), asset->etag)) {
    r.status = 304;
    return r;
  }
  r.body = std::string(asset->file->bytes);
  return r;
}

}  // namespace lemma::server
