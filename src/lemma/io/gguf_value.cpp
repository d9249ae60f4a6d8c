#include "lemma/io/gguf_value.h"

#include <array>
#include <limits>

#include <fmt/format.h>

#include "lemma/base/error.h"

namespace lemma {

namespace {
constexpr std::array<std::string_view, 13> kTypeNames{"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                      "bool", "string", "array", "u64", "i64", "f64"};

bool is_float_type(GgufValueType t) { return t == GgufValueType::kF32 || t == GgufValueType::kF64; }

// Quotes and escapes a string for display, cutting long ones so `inspect` stays one line.
std::string quoted(const std::string& s, size_t max_chars = 60) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_chars) out += "...";
  return out + "\"";
}
}  // namespace

std::optional<std::string_view> gguf_type_name(uint32_t type) {
  if (type >= kTypeNames.size()) return std::nullopt;
  return kTypeNames[type];
}

std::string_view gguf_type_name(GgufValueType type) {
  return gguf_type_name(static_cast<uint32_t>(type)).value_or("?");
}

size_t gguf_scalar_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kBool: return 1;
    case GgufValueType::kU16: case GgufValueType::kI16: return 2;
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kF32: return 4;
    case GgufValueType::kU64: case GgufValueType::kI64: case GgufValueType::kF64: return 8;
    case GgufValueType::kString: case GgufValueType::kArray: return 0;
  }
  return 0;
}

bool gguf_is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kU16: case GgufValueType::kI16:
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kU64: case GgufValueType::kI64:
      return true;
    default:
      return false;
  }
}

bool gguf_is_signed(GgufValueType t) {
  return t == GgufValueType::kI8 || t == GgufValueType::kI16 || t == GgufValueType::kI32 || t == GgufValueType::kI64;
}

GgufValue GgufValue::integers(std::string key, GgufValueType type, bool is_array, std::vector<uint64_t> raw) {
  GgufValue v;
  v.key_ = std::move(key);
  v.element_type_ = type;
  v.is_array_ = is_array;
  v.raw_ = std::move(raw);
  return v;
}

GgufValue GgufValue::floats(std::string key, GgufValueType type, bool is_array, std::vector<double> values) {
  GgufValue v;
  v.key_ = std::move(key);
  v.element_type_ = type;
  v.is_array_ = is_array;
  v.floats_ = std::move(values);
  return v;
}

GgufValue GgufValue::strings(std::string key, bool is_array, std::vector<std::string> values) {
  GgufValue v;
  v.key_ = std::move(key);
  v.element_type_ = GgufValueType::kString;
  v.is_array_ = is_array;
  v.strings_ = std::move(values);
  return v;
}

size_t GgufValue::size() const {
  if (element_type_ == GgufValueType::kString) return strings_.size();
  if (is_float_type(element_type_)) return floats_.size();
  return raw_.size();
}

GgufValueType GgufValue::element_type() const {
  if (!is_array_) type_mismatch("array");
  return element_type_;
}

void GgufValue::type_mismatch(std::string_view expected) const {
  const std::string actual = is_array_ ? fmt::format("array of {}", gguf_type_name(element_type_))
                                       : std::string(gguf_type_name(element_type_));
  fail<FormatError>("GGUF key '{}': expected {}, found {}", key_, expected, actual);
}

void GgufValue::require_scalar(std::string_view expected) const {
  if (is_array_ || size() != 1) type_mismatch(expected);
}

void GgufValue::require_array(std::string_view expected) const {
  if (!is_array_) type_mismatch(expected);
}

// Element i as int64, checking that unsigned 64-bit values fit.
int64_t GgufValue::int_at(size_t i) const {
  const uint64_t bits = raw_[i];
  if (!gguf_is_signed(element_type_) && bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail<FormatError>("GGUF key '{}': value {} does not fit in a signed 64-bit integer", key_, bits);
  return static_cast<int64_t>(bits);
}

int64_t GgufValue::as_int() const {
  if (!gguf_is_integer(element_type_)) type_mismatch("an integer");
  require_scalar("an integer");
  return int_at(0);
}

uint64_t GgufValue::as_uint() const {
  if (!gguf_is_integer(element_type_)) type_mismatch("an unsigned integer");
  require_scalar("an unsigned integer");
  if (gguf_is_signed(element_type_) && static_cast<int64_t>(raw_[0]) < 0)
    fail<FormatError>("GGUF key '{}': expected an unsigned integer, found {} {}", key_,
                      gguf_type_name(element_type_), static_cast<int64_t>(raw_[0]));
  return raw_[0];
}

double GgufValue::as_float() const {
  if (is_float_type(element_type_)) {
    require_scalar("a float");
    return floats_[0];
  }
  if (!gguf_is_integer(element_type_)) type_mismatch("a float");
  require_scalar("a float");
  return gguf_is_signed(element_type_) ? static_cast<double>(static_cast<int64_t>(raw_[0]))
                                       : static_cast<double>(raw_[0]);
}

bool GgufValue::as_bool() const {
  if (element_type_ != GgufValueType::kBool) type_mismatch("bool");
  require_scalar("bool");
  return raw_[0] != 0;
}

const std::string& GgufValue::as_string() const {
  if (element_type_ != GgufValueType::kString) type_mismatch("string");
  require_scalar("string");
  return strings_[0];
}

const std::vector<std::string>& GgufValue::as_strings() const {
  if (element_type_ != GgufValueType::kString) type_mismatch("array of string");
  require_array("array of string");
  return strings_;
}

std::vector<int64_t> GgufValue::as_ints() const {
  if (!gguf_is_integer(element_type_)) type_mismatch("array of integers");
  require_array("array of integers");
  std::vector<int64_t> out(raw_.size());
  for (size_t i = 0; i < raw_.size(); ++i) out[i] = int_at(i);
  return out;
}

std::vector<float> GgufValue::as_floats() const {
  require_array("array of floats");
  if (is_float_type(element_type_)) return {floats_.begin(), floats_.end()};
  if (!gguf_is_integer(element_type_)) type_mismatch("array of floats");
  std::vector<float> out(raw_.size());
  for (size_t i = 0; i < raw_.size(); ++i)
    out[i] = gguf_is_signed(element_type_) ? static_cast<float>(static_cast<int64_t>(raw_[i]))
                                           : static_cast<float>(raw_[i]);
  return out;
}

std::string GgufValue::element_display(size_t i) const {
  if (element_type_ == GgufValueType::kString) return quoted(strings_[i]);
  if (is_float_type(element_type_)) return fmt::format("{:g}", floats_[i]);
  if (element_type_ == GgufValueType::kBool) return raw_[i] ? "true" : "false";
  if (gguf_is_signed(element_type_)) return fmt::format("{}", static_cast<int64_t>(raw_[i]));
  return fmt::format("{}", raw_[i]);
}

std::string GgufValue::to_display(size_t max_items) const {
  if (!is_array_) return size() == 1 ? element_display(0) : std::string("<empty>");
  std::string out = fmt::format("[{} x {}] [", gguf_type_name(element_type_), size());
  const size_t shown = std::min(max_items, size());
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + element_display(i);
  if (shown < size()) out += shown ? ", ..." : "...";
  return out + "]";
}

}  // namespace lemma
