// An in-memory GgufMetadataLookup for small synthetic tokenizers in tests.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "lemma/tokenizer/gguf_metadata.h"

namespace lemma::testing {

class FakeGguf final : public GgufMetadataLookup {
 public:
  using Value = std::variant<std::string, int64_t, bool, std::vector<std::string>, std::vector<float>,
                             std::vector<int64_t>>;
  std::map<std::string, Value, std::less<>> values;

  template <typename T>
  std::optional<T> get(std::string_view key) const {
    auto it = values.find(key);
    if (it == values.end() || !std::holds_alternative<T>(it->second)) return std::nullopt;
    return std::get<T>(it->second);
  }
  std::optional<std::string> get_string(std::string_view k) const override { return get<std::string>(k); }
  std::optional<int64_t> get_int(std::string_view k) const override { return get<int64_t>(k); }
  std::optional<bool> get_bool(std::string_view k) const override { return get<bool>(k); }
  std::optional<std::vector<std::string>> get_strings(std::string_view k) const override {
    return get<std::vector<std::string>>(k);
  }
  std::optional<std::vector<float>> get_floats(std::string_view k) const override { return get<std::vector<float>>(k); }
  std::optional<std::vector<int64_t>> get_ints(std::string_view k) const override { return get<std::vector<int64_t>>(k); }
};

}  // namespace lemma::testing
