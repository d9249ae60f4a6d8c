#include "lemma/io/file_write.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "lemma/base/error.h"

namespace lemma {

void write_file_atomically(const std::string& path, std::span<const uint8_t> bytes) {
  // A name of this process and call alone: concurrent writers of one path (tests running in
  // parallel processes) each rename a whole file of their own; the last rename wins.
  static std::atomic<uint64_t> calls{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail<IoError>("cannot create {}", tmp);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) fail<IoError>("cannot write {}", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    fail<IoError>("cannot rename {} to {}: {}", tmp, path, ec.message());
  }
}

}  // namespace lemma
