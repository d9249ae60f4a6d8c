// The web chat's static files (src/lemma/server/webui/), compiled into the binary by CMake
// (cmake/embed_files.cmake generates the definition). Immutable; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace lemma::server {

struct EmbeddedFile {
  std::string_view name = {};   // file name inside webui/, e.g. "app.js"
  std::string_view bytes = {};  // the file's contents, exactly
};

// Every file of webui/, in name order.
const std::vector<EmbeddedFile>& embedded_web_files();

}  // namespace lemma::server
