// A read-only view of a whole file's bytes: lazily mmap'ed, mmap'ed and pre-faulted, or copied into
// owned memory. Move-only; the bytes stay valid for the object's lifetime. Thread-safe to read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lemma {

enum class LoadMode {
  kLazyMmap,      // pages are read on first touch
  kPrefaultMmap,  // mmap + MAP_POPULATE/madvise so every page is resident before use
  kCopy,          // read into owned anonymous memory, 2 MiB aligned and advised MADV_HUGEPAGE
                  // (transparent huge pages where enabled); the file can change afterwards
};

// Parses "lazy" | "prefault" | "copy"; throws InvalidArgument otherwise.
LoadMode parse_load_mode(const std::string& name);
const char* to_string(LoadMode mode);

class MappedFile {
 public:
  MappedFile() = default;
  // Opens `path` with the given mode; throws IoError naming the path on failure.
  static MappedFile open(const std::string& path, LoadMode mode = LoadMode::kLazyMmap);
  // Wraps bytes already in memory (copied), e.g. for fuzzing or tests. `name` is used in errors.
  static MappedFile from_bytes(std::span<const uint8_t> bytes, std::string name);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  LoadMode mode() const { return mode_; }
  // Seconds spent in open() (mapping, pre-faulting or copying).
  double load_seconds() const { return load_seconds_; }

 private:
  void release();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool is_mapped_ = false;       // data_ is an mmap (of the file, or kCopy's anonymous memory)
  size_t mapped_bytes_ = 0;      // that mapping's length
  std::vector<uint8_t> owned_;  // used by from_bytes()
  std::string path_;
  LoadMode mode_ = LoadMode::kLazyMmap;
  double load_seconds_ = 0.0;
};

}  // namespace lemma
