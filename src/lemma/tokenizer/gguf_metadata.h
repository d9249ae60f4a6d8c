// The narrow view of GGUF metadata the tokenizer needs, so this folder does not depend on
// lemma/io. An adapter over io's GgufFile (or a test reader) implements it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lemma {

class GgufMetadataLookup {
 public:
  virtual ~GgufMetadataLookup() = default;
  // Each returns nullopt when the key is absent (or has another type).
  virtual std::optional<std::string> get_string(std::string_view key) const = 0;
  virtual std::optional<int64_t> get_int(std::string_view key) const = 0;
  virtual std::optional<bool> get_bool(std::string_view key) const = 0;
  virtual std::optional<std::vector<std::string>> get_strings(std::string_view key) const = 0;
  virtual std::optional<std::vector<float>> get_floats(std::string_view key) const = 0;
  virtual std::optional<std::vector<int64_t>> get_ints(std::string_view key) const = 0;
};

}  // namespace lemma
