// GgufWriter: builds a valid GGUF v3 file in memory (metadata of every type, tensors padded to the
// alignment) and writes it out. Metadata and tensors keep the order they were added in. The writer
// rejects what the reader would reject (duplicate keys/names, bad shapes, sizes that do not match),
// so anything it writes parses back. Tensor bytes are copied in. Not thread-safe.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "lemma/io/gguf.h"
#include "lemma/io/gguf_value.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma {

// The GGUF type of a C++ scalar (uint8_t -> kU8, float -> kF32, bool -> kBool, ...).
template <typename T>
constexpr GgufValueType gguf_type_of() {
  if constexpr (std::is_same_v<T, bool>) return GgufValueType::kBool;
  else if constexpr (std::is_same_v<T, uint8_t>) return GgufValueType::kU8;
  else if constexpr (std::is_same_v<T, int8_t>) return GgufValueType::kI8;
  else if constexpr (std::is_same_v<T, uint16_t>) return GgufValueType::kU16;
  else if constexpr (std::is_same_v<T, int16_t>) return GgufValueType::kI16;
  else if constexpr (std::is_same_v<T, uint32_t>) return GgufValueType::kU32;
  else if constexpr (std::is_same_v<T, int32_t>) return GgufValueType::kI32;
  else if constexpr (std::is_same_v<T, uint64_t>) return GgufValueType::kU64;
  else if constexpr (std::is_same_v<T, int64_t>) return GgufValueType::kI64;
  else if constexpr (std::is_same_v<T, float>) return GgufValueType::kF32;
  else if constexpr (std::is_same_v<T, double>) return GgufValueType::kF64;
  else static_assert(!sizeof(T), "no GGUF type for this C++ type");
}

// Makes a scalar or array value from C++ values (the type follows T).
template <typename T>
GgufValue make_gguf_value(std::string key, std::span<const T> values, bool is_array);
GgufValue make_gguf_string(std::string key, std::string value);
GgufValue make_gguf_strings(std::string key, std::vector<std::string> values);

class GgufWriter {
 public:
  // Adds a metadata entry; `general.alignment` (a power-of-two u32) also sets the data alignment.
  // Throws InvalidArgument on a duplicate key.
  void set(GgufValue value);
  template <typename T>
  void set_scalar(std::string key, T value) {
    set(make_gguf_value<T>(std::move(key), std::span<const T>(&value, 1), false));
  }
  template <typename T>
  void set_array(std::string key, std::span<const T> values) {
    set(make_gguf_value<T>(std::move(key), values, true));
  }
  template <typename T>
  void set_array(std::string key, const std::vector<T>& values) {
    set_array<T>(std::move(key), std::span<const T>(values));
  }
  // std::vector<bool> is not contiguous, so bool arrays get their own overload.
  void set_array(std::string key, const std::vector<bool>& values);
  void set_string(std::string key, std::string value) { set(make_gguf_string(std::move(key), std::move(value))); }
  void set_strings(std::string key, std::vector<std::string> values) {
    set(make_gguf_strings(std::move(key), std::move(values)));
  }
  void set_alignment(uint32_t alignment) { set_scalar<uint32_t>("general.alignment", alignment); }

  // Adds a tensor; `shape` is outermost first (as in TensorView). Throws InvalidArgument when the
  // dtype has no ggml id, the rank is not 1..4, a dimension is < 1, the row length is not a whole
  // number of blocks, `data` has the wrong size, or the name is taken.
  void add_tensor(std::string name, DType dtype, const Shape& shape, std::span<const uint8_t> data);
  void add_tensor(std::string name, const TensorView& view);

  uint64_t alignment() const { return alignment_; }
  std::vector<uint8_t> to_bytes() const;
  // Writes to `path` (via a temporary file renamed into place); throws IoError.
  void write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    uint32_t ggml_type;
    Shape shape;
    std::vector<uint8_t> data;
  };
  std::vector<GgufValue> metadata_;
  std::set<std::string, std::less<>> keys_;
  std::vector<PendingTensor> tensors_;
  std::set<std::string, std::less<>> tensor_names_;
  uint64_t alignment_ = kGgufDefaultAlignment;
};

}  // namespace lemma
