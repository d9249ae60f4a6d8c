#include "gguf_test_reader.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace lemma::testing {
namespace {

struct Cursor {
  std::vector<char> data;
  size_t pos = 0;
  template <typename T>
  T read() {
    if (pos + sizeof(T) > data.size()) throw std::runtime_error("GGUF truncated");
    T v;
    std::memcpy(&v, data.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = read<uint64_t>();
    if (pos + n > data.size()) throw std::runtime_error("GGUF string truncated");
    std::string s(data.data() + pos, n);
    pos += n;
    return s;
  }
};

enum : uint32_t { U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 };

// Reads a scalar of GGUF type `t` as int64, double or bool.
std::variant<int64_t, double, bool, std::string> scalar(Cursor& c, uint32_t t) {
  switch (t) {
    case U8: return static_cast<int64_t>(c.read<uint8_t>());
    case I8: return static_cast<int64_t>(c.read<int8_t>());
    case U16: return static_cast<int64_t>(c.read<uint16_t>());
    case I16: return static_cast<int64_t>(c.read<int16_t>());
    case U32: return static_cast<int64_t>(c.read<uint32_t>());
    case I32: return static_cast<int64_t>(c.read<int32_t>());
    case U64: return static_cast<int64_t>(c.read<uint64_t>());
    case I64: return c.read<int64_t>();
    case F32: return static_cast<double>(c.read<float>());
    case F64: return c.read<double>();
    case BOOL: return c.read<uint8_t>() != 0;
    case STR: return c.str();
  }
  throw std::runtime_error("GGUF: unknown value type " + std::to_string(t));
}

}  // namespace

GgufTestReader::GgufTestReader(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  Cursor c;
  c.data.assign(std::istreambuf_iterator<char>(in), {});
  if (c.read<uint32_t>() != 0x46554747) throw std::runtime_error("not a GGUF file: " + path);
  c.read<uint32_t>();  // version
  c.read<uint64_t>();  // tensor count
  const auto n_kv = c.read<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.str();
    const auto type = c.read<uint32_t>();
    if (type != ARR) {
      std::visit([&](auto&& v) { values_.emplace(key, Value(v)); }, scalar(c, type));
      continue;
    }
    const auto elem = c.read<uint32_t>();
    const auto n = c.read<uint64_t>();
    if (elem == STR) {
      std::vector<std::string> v;
      v.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.push_back(c.str());
      values_.emplace(key, std::move(v));
    } else if (elem == F32 || elem == F64) {
      std::vector<double> v;
      v.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.push_back(std::get<double>(scalar(c, elem)));
      values_.emplace(key, std::move(v));
    } else {
      std::vector<int64_t> v;
      v.reserve(n);
      for (uint64_t k = 0; k < n; ++k) {
        auto s = scalar(c, elem);
        v.push_back(std::holds_alternative<bool>(s) ? std::get<bool>(s) : std::get<int64_t>(s));
      }
      values_.emplace(key, std::move(v));
    }
  }
}

const GgufTestReader::Value* GgufTestReader::find(std::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<std::string> GgufTestReader::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v && std::holds_alternative<std::string>(*v)) return std::get<std::string>(*v);
  return std::nullopt;
}

std::optional<int64_t> GgufTestReader::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (v && std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v);
  return std::nullopt;
}

std::optional<bool> GgufTestReader::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v && std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
  return std::nullopt;
}

std::optional<std::vector<std::string>> GgufTestReader::get_strings(std::string_view key) const {
  const Value* v = find(key);
  if (v && std::holds_alternative<std::vector<std::string>>(*v)) return std::get<std::vector<std::string>>(*v);
  return std::nullopt;
}

std::optional<std::vector<float>> GgufTestReader::get_floats(std::string_view key) const {
  const Value* v = find(key);
  if (!v || !std::holds_alternative<std::vector<double>>(*v)) return std::nullopt;
  const auto& d = std::get<std::vector<double>>(*v);
  return std::vector<float>(d.begin(), d.end());
}

std::optional<std::vector<int64_t>> GgufTestReader::get_ints(std::string_view key) const {
  const Value* v = find(key);
  if (v && std::holds_alternative<std::vector<int64_t>>(*v)) return std::get<std::vector<int64_t>>(*v);
  return std::nullopt;
}

}  // namespace lemma::testing
