// ByteReader: a bounds-checked little-endian cursor over untrusted file bytes.
// Every read checks the remaining length first, so a hostile count or length can never make the
// parser read past the end or allocate more than the file could describe. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "lemma/base/error.h"

namespace lemma::io {

class ByteReader {
 public:
  // `name` prefixes every error ("<name>: ...").
  ByteReader(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), name_(name) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t size() const { return bytes_.size(); }

  // Throws FormatError "<name>: truncated at offset O: <what> needs N bytes, M remain".
  void require(uint64_t n, std::string_view what) const {
    if (n > remaining())
      fail<FormatError>("{}: truncated at offset {}: {} needs {} bytes, only {} remain", name_, pos_, what, n,
                        remaining());
  }

  template <typename T>
  T read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    require(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));  // unaligned-safe; hosts are little-endian
    pos_ += sizeof(T);
    return value;
  }

  // A GGUF string: u64 length then that many bytes (not NUL-terminated).
  std::string read_string(std::string_view what) {
    const auto length = read<uint64_t>(what);
    if (length > remaining())
      fail<FormatError>("{}: {} at offset {} claims {} bytes but only {} remain", name_, what, pos_ - 8, length,
                        remaining());
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return s;
  }

  void skip(uint64_t n, std::string_view what) {
    require(n, what);
    pos_ += static_cast<size_t>(n);
  }

  const std::string& name() const { return name_; }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& name_;
  size_t pos_ = 0;
};

}  // namespace lemma::io
