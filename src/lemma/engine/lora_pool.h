// LoraPool: the LoRA adapters a server (or `lemma generate`/`chat`) offers, by name (G29). Adapters
// are registered with a directory (at start, `--lora-modules name=path`, or at run time), loaded
// when registered (so bad files and ranks above max_rank are refused then) and kept in memory up to
// max_loras, least recently used first out; an evicted adapter is read again from its directory the
// next time a request names it. Requests hold their adapter by shared_ptr: an adapter in use is never
// evicted, and unloading one in use only removes its name (its running requests finish on it; the
// weights go with the last of them). Adapters still held after eviction or unloading count toward
// max_loras, so memory stays bounded: when every one of max_loras live adapters is in use, acquiring
// another fails with LoraPoolFull. Thread-safe (one mutex; loads run under it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/model/model_config.h"

namespace lemma {

// Every one of max_loras live adapters is in use: retry later (HTTP 429).
class LoraPoolFull : public Error {
 public:
  using Error::Error;
};

// A name that is not registered (HTTP 404).
class LoraNotFound : public Error {
 public:
  using Error::Error;
};

struct LoraPoolConfig {
  int64_t max_loras = 8;      // adapters in memory at once, >= 1
  int64_t max_lora_rank = 64;  // larger ranks are refused at load (InvalidArgument)
};

struct LoraModuleInfo {
  std::string name;
  std::filesystem::path path;
  bool resident = false;
  int64_t rank = 0;
};

class LoraPool {
 public:
  // Throws InvalidArgument for max_loras < 1 or max_lora_rank < 1.
  LoraPool(ModelConfig model_config, LoraPoolConfig config);

  // Registers `name` and loads it. Throws InvalidArgument when the name is taken or empty, and
  // whatever load_lora_adapter throws (nothing registered then). When the pool is full of adapters
  // in use the adapter is registered but not kept in memory.
  void load(const std::string& name, const std::filesystem::path& path);
  // Removes `name`; throws LoraNotFound when it is not registered.
  void unload(const std::string& name);
  // The adapter registered as `name`, loading it again if it was evicted; marks it most recently
  // used. Throws LoraNotFound, LoraPoolFull, or what a reload throws.
  std::shared_ptr<const LoraAdapter> acquire(const std::string& name);

  bool contains(const std::string& name) const;
  std::vector<LoraModuleInfo> list() const;  // by name
  int64_t num_live() const;                  // adapters in memory (resident or still held by requests)
  const LoraPoolConfig& config() const { return config_; }

 private:
  struct Entry {
    std::filesystem::path path;
    std::shared_ptr<const LoraAdapter> adapter;  // null while evicted
    uint64_t last_used = 0;
    int64_t rank = 0;
  };
  std::shared_ptr<const LoraAdapter> load_locked(const std::string& name, const std::filesystem::path& path);
  // Drops least recently used resident adapters nobody else holds until one more fits; false if none can go.
  bool make_room_locked(const std::string& keep);
  int64_t num_live_locked() const;

  ModelConfig model_config_;
  LoraPoolConfig config_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::vector<std::weak_ptr<const LoraAdapter>> released_;  // unloaded or evicted while in use
  uint64_t clock_ = 0;
};

// "name=path" of --lora-modules; throws InvalidArgument naming the flag for a malformed one.
std::pair<std::string, std::filesystem::path> parse_lora_module(const std::string& spec);

}  // namespace lemma
