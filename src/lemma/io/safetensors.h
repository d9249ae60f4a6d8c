// SafetensorsFile: a validated, read-only view of one .safetensors file (8-byte little-endian header
// length, a JSON header, then the data). Every entry's dtype, shape, offsets and overlaps are checked
// before a TensorView is handed out; problems raise FormatError "<file>: ...". Gaps between tensors
// are allowed. Move-only (owns the MappedFile; moving keeps the views valid). Thread-safe to read.
// Views point at data_offset() + begin, which is only as aligned as the writer made it: like the
// reference writer, write_safetensors pads the header to 8 bytes and orders data by element size, so
// its views are naturally aligned; files from elsewhere may not be.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lemma/base/mapped_file.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma {

// Header lengths beyond this are refused as absurd (the reference implementation's limit).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100u << 20;

struct SafetensorsTensor {
  std::string name;
  TensorView view;
};

class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path, LoadMode mode = LoadMode::kLazyMmap);
  static SafetensorsFile parse(MappedFile file);

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // Tensors in data order (by begin offset).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* tensor(std::string_view name) const;
  // The optional "__metadata__" string map.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Absolute offset of the data section (8 + header length).
  uint64_t data_offset() const { return data_offset_; }

  const MappedFile& file() const { return file_; }
  const std::string& path() const { return file_.path(); }
  double load_seconds() const { return file_.load_seconds(); }

 private:
  SafetensorsFile() = default;
  friend class SafetensorsParser;

  MappedFile file_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// Serialises tensors (data contiguous, ordered by element size, largest first, then given order)
// and metadata into safetensors bytes.
// Throws InvalidArgument for dtypes safetensors cannot express (GGUF blocks) or duplicate names.
std::vector<uint8_t> encode_safetensors(std::span<const SafetensorsTensor> tensors,
                                        const std::map<std::string, std::string>& metadata = {});
// encode_safetensors + an atomic write to `path`; throws IoError.
void write_safetensors(const std::string& path, std::span<const SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace lemma
