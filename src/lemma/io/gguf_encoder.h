// GgufEncoder: appends GGUF primitives (little-endian integers, length-prefixed strings, typed values)
// to a byte buffer. GgufWriter builds valid files with it; tests and the fuzz corpus generator use it
// directly to craft deliberately broken files. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "lemma/io/gguf_value.h"

namespace lemma {

class GgufEncoder {
 public:
  template <typename T>
  GgufEncoder& put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));  // hosts are little-endian, like GGUF
    return *this;
  }
  GgufEncoder& u32(uint32_t v) { return put(v); }
  GgufEncoder& u64(uint64_t v) { return put(v); }
  GgufEncoder& string(std::string_view s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  GgufEncoder& raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
    return *this;
  }
  GgufEncoder& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  // Pads with zeros to a multiple of `alignment`.
  GgufEncoder& pad_to(uint64_t alignment) { return zeros(padding(bytes_.size(), alignment)); }
  // Writes a whole value in its on-disk form (type id, then payload; arrays with element type and count).
  GgufEncoder& value(const GgufValue& v);

  static size_t padding(uint64_t size, uint64_t alignment) {
    return static_cast<size_t>((alignment - size % alignment) % alignment);
  }

  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  void element(const GgufValue& v, size_t i);
  std::vector<uint8_t> bytes_;
};

}  // namespace lemma
