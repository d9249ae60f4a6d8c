// Test-only reader of GGUF metadata (no tensors) implementing GgufMetadataLookup, so the
// tokenizer tests do not depend on lemma/io. To be replaced by io's GgufFile adapter.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lemma/tokenizer/gguf_metadata.h"

namespace lemma::testing {

class GgufTestReader final : public GgufMetadataLookup {
 public:
  explicit GgufTestReader(const std::string& path);

  std::optional<std::string> get_string(std::string_view key) const override;
  std::optional<int64_t> get_int(std::string_view key) const override;
  std::optional<bool> get_bool(std::string_view key) const override;
  std::optional<std::vector<std::string>> get_strings(std::string_view key) const override;
  std::optional<std::vector<float>> get_floats(std::string_view key) const override;
  std::optional<std::vector<int64_t>> get_ints(std::string_view key) const override;

 private:
  using Value = std::variant<std::string, int64_t, double, bool, std::vector<std::string>,
                             std::vector<int64_t>, std::vector<double>>;
  const Value* find(std::string_view key) const;
  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace lemma::testing
