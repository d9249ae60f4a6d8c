// SafetensorsCheckpoint: every tensor of a Hugging Face checkpoint, single-file or sharded, by name.
// open() accepts a directory (model.safetensors.index.json or model.safetensors), an index file, or
// one .safetensors file. For an index it opens each shard once and checks that every weight_map
// entry is in the shard it names and that no tensor appears in two shards (a shard's tensors that
// weight_map does not list are still served: the index is a locator, not a filter). Move-only; views stay
// valid while the checkpoint lives. Thread-safe to read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lemma/base/mapped_file.h"
#include "lemma/io/safetensors.h"

namespace lemma {

class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open(const std::string& path, LoadMode mode = LoadMode::kLazyMmap);

  SafetensorsCheckpoint(SafetensorsCheckpoint&&) noexcept = default;
  SafetensorsCheckpoint& operator=(SafetensorsCheckpoint&&) noexcept = default;

  const SafetensorsTensor* tensor(std::string_view name) const;
  // All tensors, sorted by name.
  std::vector<const SafetensorsTensor*> tensors() const;
  size_t size() const { return by_name_.size(); }
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // The index file, or empty for a single-file checkpoint.
  const std::string& index_path() const { return index_path_; }
  // Sum of the tensors' data bytes.
  uint64_t total_bytes() const;
  // Time spent mapping/copying all shards (MappedFile::load_seconds summed).
  double load_seconds() const;

 private:
  SafetensorsCheckpoint() = default;
  void open_index(const std::string& index_path, LoadMode mode);
  void open_single(const std::string& path, LoadMode mode);
  void add_shard_tensors(size_t shard);

  std::vector<SafetensorsFile> shards_;
  std::map<std::string, const SafetensorsTensor*, std::less<>> by_name_;
  std::map<std::string, size_t, std::less<>> shard_of_;
  std::string index_path_;
};

}  // namespace lemma
