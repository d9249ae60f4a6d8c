#include "lemma/io/safetensors_checkpoint.h"

#include <filesystem>

#include "lemma/base/error.h"
#include "lemma/io/strict_json.h"

namespace lemma {

namespace fs = std::filesystem;

namespace {
constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// Shard names come from an untrusted index: they must stay inside the checkpoint directory.
void check_shard_name(const std::string& index, const std::string& tensor, const std::string& shard) {
  const fs::path p(shard);
  bool escapes = shard.empty() || p.is_absolute();
  for (const auto& part : p) escapes = escapes || part == "..";
  if (escapes) fail<FormatError>("{}: weight_map['{}'] names shard '{}' outside the checkpoint directory", index,
                                 tensor, shard);
}
}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path, LoadMode mode) {
  SafetensorsCheckpoint ckpt;
  const fs::path p(path);
  if (fs::is_directory(p)) {
    if (fs::exists(p / kIndexName)) ckpt.open_index((p / kIndexName).string(), mode);
    else if (fs::exists(p / kSingleName)) ckpt.open_single((p / kSingleName).string(), mode);
    else fail<IoError>("{}: no {} or {} in this directory", path, kIndexName, kSingleName);
  } else if (p.extension() == ".json") {
    ckpt.open_index(path, mode);
  } else {
    ckpt.open_single(path, mode);
  }
  return ckpt;
}

void SafetensorsCheckpoint::open_single(const std::string& path, LoadMode mode) {
  shards_.push_back(SafetensorsFile::open(path, mode));
  add_shard_tensors(0);
}

void SafetensorsCheckpoint::open_index(const std::string& index_path, LoadMode mode) {
  index_path_ = index_path;
  const auto file = MappedFile::open(index_path, LoadMode::kCopy);
  const auto index = io::parse_strict_json(
      std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    fail<FormatError>("{}: expected an object with a \"weight_map\" object", index_path);
  const auto& weight_map = index["weight_map"];
  if (weight_map.empty()) fail<FormatError>("{}: weight_map is empty", index_path);

  // Each shard is opened once, in name order, whatever order weight_map lists it in.
  std::map<std::string, size_t> shard_ids;
  for (const auto& [tensor, shard] : weight_map.items()) {
    if (!shard.is_string()) fail<FormatError>("{}: weight_map['{}'] must be a file name", index_path, tensor);
    check_shard_name(index_path, tensor, shard.get<std::string>());
    shard_ids.emplace(shard.get<std::string>(), 0);
  }
  const fs::path dir = fs::path(index_path).parent_path();
  shards_.reserve(shard_ids.size());
  for (auto& [shard, id] : shard_ids) {
    const fs::path shard_path = dir / shard;
    if (!fs::exists(shard_path))
      fail<IoError>("{}: shard '{}' is missing (expected at {})", index_path, shard, shard_path.string());
    id = shards_.size();
    shards_.push_back(SafetensorsFile::open(shard_path.string(), mode));
  }
  for (size_t i = 0; i < shards_.size(); ++i) add_shard_tensors(i);

  for (const auto& [tensor, shard] : weight_map.items()) {
    const auto it = shard_of_.find(tensor);
    const size_t named = shard_ids.at(shard.get<std::string>());
    if (it == shard_of_.end() || it->second != named)
      fail<FormatError>("{}: weight_map puts '{}' in {}, but that shard does not contain it", index_path, tensor,
                        shard.get<std::string>());
  }
}

void SafetensorsCheckpoint::add_shard_tensors(size_t shard) {
  for (const auto& t : shards_[shard].tensors()) {
    const auto [it, inserted] = shard_of_.emplace(t.name, shard);
    if (!inserted)
      fail<FormatError>("{}: tensor '{}' appears in two shards: {} and {}",
                        index_path_.empty() ? shards_[shard].path() : index_path_, t.name,
                        shards_[it->second].path(), shards_[shard].path());
    by_name_.emplace(t.name, &t);
  }
}

const SafetensorsTensor* SafetensorsCheckpoint::tensor(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const SafetensorsTensor*> SafetensorsCheckpoint::tensors() const {
  std::vector<const SafetensorsTensor*> out;
  out.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) out.push_back(t);
  return out;
}

uint64_t SafetensorsCheckpoint::total_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, t] : by_name_) total += t->view.bytes();
  return total;
}

double SafetensorsCheckpoint::load_seconds() const {
  double total = 0;
  for (const auto& s : shards_) total += s.load_seconds();
  return total;
}

}  // namespace lemma
