#include "lemma/io/gguf.h"

#include "lemma/base/error.h"

namespace lemma {

namespace {
// Value accessors name the key; this adds the file so the message is complete.
template <typename F>
auto with_path(const std::string& path, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
}
}  // namespace

GgufFile GgufFile::open(const std::string& path, LoadMode mode) { return parse(MappedFile::open(path, mode)); }

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  return with_path(path(), [&] { return v->as_string(); });
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  return with_path(path(), [&] { return v->as_int(); });
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  return with_path(path(), [&] { return v->as_float(); });
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  return with_path(path(), [&] { return v->as_bool(); });
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace lemma
