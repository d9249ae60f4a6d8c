// GgufFile: a validated, read-only view of a GGUF (v2 or v3) file: its metadata in file order and
// its tensors as TensorViews into the mapped bytes. parse() checks every count, length, type,
// shape, offset and overlap before anything is used, so a hostile file raises FormatError
// ("<file>: ...") instead of reading out of bounds. Move-only (owns the MappedFile; moving keeps
// the views valid). Thread-safe to read.
// Each view starts at a multiple of alignment() from the file start (and mappings start on a page),
// so views are naturally aligned unless a file sets general.alignment below the element size.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lemma/base/mapped_file.h"
#include "lemma/io/gguf_value.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kGgufDefaultAlignment = 32;
constexpr int kGgufMaxDims = 4;

struct GgufTensor {
  std::string name;
  TensorView view;     // shape outermost first (GGUF's ne[] reversed)
  uint32_t ggml_type;  // the id stored in the file
  uint64_t offset;     // relative to the data section
};

class GgufFile {
 public:
  static GgufFile open(const std::string& path, LoadMode mode = LoadMode::kLazyMmap);
  // Validates everything; throws FormatError "<file>: ..." naming the key/tensor and what was expected.
  static GgufFile parse(MappedFile file);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // Absolute file offset of the data section (tensor offsets are relative to it).
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }  // file order
  const GgufValue* find(std::string_view key) const;
  // Typed getters: nullopt when the key is absent; FormatError when it has another type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }  // file order
  const GgufTensor* tensor(std::string_view name) const;

  const MappedFile& file() const { return file_; }
  const std::string& path() const { return file_.path(); }
  double load_seconds() const { return file_.load_seconds(); }

 private:
  GgufFile() = default;
  friend class GgufParser;

  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> key_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace lemma
