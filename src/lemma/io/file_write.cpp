#include "lemma/io/file_write.h"

#include <filesystem>
#include <fstream>

#include "lemma/base/error.h"

namespace lemma {

void write_file_atomically(const std::string& path, std::span<const uint8_t> bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail<IoError>("cannot create {}", tmp);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) fail<IoError>("cannot write {}", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail<IoError>("cannot rename {} to {}: {}", tmp, path, ec.message());
}

}  // namespace lemma
