// GgufValue: one typed metadata value of a GGUF file (a scalar or a one-level array).
// Values are immutable after construction; accessors check the stored type and throw FormatError
// naming the key and the actual type, so callers can read model hyper-parameters without
// pre-checking. Thread-safe to read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lemma {

// Value type ids as stored on disk (gguf_type in the GGUF spec).
enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12
};

// "u32", "string", "array", ...; nullopt for ids outside the spec.
std::optional<std::string_view> gguf_type_name(uint32_t type);
std::string_view gguf_type_name(GgufValueType type);
// Bytes of one element on disk; 0 for string and array (variable size).
size_t gguf_scalar_bytes(GgufValueType type);
bool gguf_is_integer(GgufValueType type);  // u8..i64 (not bool)
bool gguf_is_signed(GgufValueType type);

class GgufValue {
 public:
  // Factories for parsers, writers and tests. `type` is the (element) type; `raw` holds integers and
  // bools as their 64-bit pattern (signed values sign-extended). Scalars hold exactly one element.
  static GgufValue integers(std::string key, GgufValueType type, bool is_array, std::vector<uint64_t> raw);
  static GgufValue floats(std::string key, GgufValueType type, bool is_array, std::vector<double> values);
  static GgufValue strings(std::string key, bool is_array, std::vector<std::string> values);

  GgufValueType type() const { return is_array_ ? GgufValueType::kArray : element_type_; }
  GgufValueType element_type() const;  // arrays only; throws FormatError for scalars
  bool is_array() const { return is_array_; }
  size_t size() const;  // array length (1 for scalars)
  const std::string& key() const { return key_; }

  // Scalar accessors. as_int/as_uint accept every integer type whose value fits; as_float also
  // accepts integers (hyper-parameters are sometimes written as ints).
  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_float() const;
  bool as_bool() const;
  const std::string& as_string() const;

  // Array accessors (element type checked like the scalar ones).
  const std::vector<std::string>& as_strings() const;
  std::vector<int64_t> as_ints() const;
  std::vector<float> as_floats() const;

  // Unchecked element access for encoders (i < size(); pick by element type): the 64-bit pattern of
  // an integer/bool element, a float element, a string element.
  uint64_t raw_at(size_t i) const { return raw_[i]; }
  double float_at(size_t i) const { return floats_[i]; }
  const std::string& string_at(size_t i) const { return strings_[i]; }

  // Short human form: `42`, `"llama"`, `[u32 x 3] [1, 2, 3]`, `[string x 32000] ["<unk>", ...]`.
  std::string to_display(size_t max_items = 8) const;

 private:
  GgufValue() = default;
  [[noreturn]] void type_mismatch(std::string_view expected) const;
  void require_scalar(std::string_view expected) const;
  void require_array(std::string_view expected) const;
  int64_t int_at(size_t i) const;
  std::string element_display(size_t i) const;

  std::string key_;
  GgufValueType element_type_ = GgufValueType::kU8;
  bool is_array_ = false;
  std::vector<uint64_t> raw_;             // integer and bool types
  std::vector<double> floats_;            // f32, f64
  std::vector<std::string> strings_;      // string
};

}  // namespace lemma
