// The built-in web chat: GET / (index.html) and GET /<file> for the other files of webui/, with
// their content types, an ETag (If-None-Match answers 304) and `Cache-Control: no-cache`, so a
// browser revalidates and picks up a new binary's page. The page is public even with --api-key:
// its API calls carry the key. Pure over the embedded files; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "lemma/server/http_types.h"

namespace lemma::server {

// The answer for a web chat path, or nullopt when the path is none of its files (the caller's 404).
// Other methods than GET and HEAD get 405.
std::optional<HttpResponse> web_ui_response(const HttpRequest& request);

// "text/html; charset=utf-8" for index.html, ... by the name's extension; octet-stream otherwise.
std::string web_content_type(std::string_view file_name);

}  // namespace lemma::server
