#include "lemma/engine/lora_pool.h"

#include <algorithm>

namespace lemma {

LoraPool::LoraPool(ModelConfig model_config, LoraPoolConfig config)
    : model_config_(std::move(model_config)), config_(config) {
  if (config_.max_loras < 1) fail<InvalidArgument>("--max-loras must be >= 1, got {}", config_.max_loras);
  if (config_.max_lora_rank < 1) fail<InvalidArgument>("--max-lora-rank must be >= 1, got {}", config_.max_lora_rank);
}

std::shared_ptr<const LoraAdapter> LoraPool::load_locked(const std::string& name, const std::filesystem::path& path) {
  LoraAdapter a = load_lora_adapter(path, model_config_, {.max_rank = config_.max_lora_rank});
  a.name = name;
  return std::make_shared<const LoraAdapter>(std::move(a));
}

int64_t LoraPool::num_live_locked() const {
  int64_t n = 0;
  for (const auto& [name, e] : entries_) n += e.adapter != nullptr;
  for (const auto& w : released_) n += !w.expired();
  return n;
}

bool LoraPool::make_room_locked(const std::string& keep) {
  std::erase_if(released_, [](const auto& w) { return w.expired(); });
  while (num_live_locked() >= config_.max_loras) {
    Entry* victim = nullptr;
    for (auto& [name, e] : entries_)
      if (name != keep && e.adapter && e.adapter.use_count() == 1 && (!victim || e.last_used < victim->last_used)) victim = &e;
    if (!victim) return false;
    victim->adapter.reset();
  }
  return true;
}

void LoraPool::load(const std::string& name, const std::filesystem::path& path) {
  if (name.empty()) fail<InvalidArgument>("a LoRA adapter needs a name");
  std::lock_guard lock(mutex_);
  if (entries_.count(name)) fail<InvalidArgument>("a LoRA adapter named '{}' is already loaded", name);
  auto adapter = load_locked(name, path);
  Entry e{path, nullptr, ++clock_, adapter->rank};
  if (make_room_locked(name)) e.adapter = std::move(adapter);
  entries_.emplace(name, std::move(e));
}

void LoraPool::unload(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) fail<LoraNotFound>("no LoRA adapter named '{}' is loaded", name);
  if (it->second.adapter && it->second.adapter.use_count() > 1) released_.push_back(it->second.adapter);
  entries_.erase(it);
}

std::shared_ptr<const LoraAdapter> LoraPool::acquire(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) fail<LoraNotFound>("no LoRA adapter named '{}' is loaded", name);
  Entry& e = it->second;
  e.last_used = ++clock_;
  if (e.adapter) return e.adapter;
  if (!make_room_locked(name))
    fail<LoraPoolFull>("LoRA adapter '{}' is not in memory and all {} adapter slots (--max-loras) are in use",
                       name, config_.max_loras);
  e.adapter = load_locked(name, e.path);
  return e.adapter;
}

bool LoraPool::contains(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return entries_.count(name) > 0;
}

std::vector<LoraModuleInfo> LoraPool::list() const {
  std::lock_guard lock(mutex_);
  std::vector<LoraModuleInfo> out;
  for (const auto& [name, e] : entries_) out.push_back({name, e.path, e.adapter != nullptr, e.rank});
  return out;
}

int64_t LoraPool::num_live() const {
  std::lock_guard lock(mutex_);
  return num_live_locked();
}

std::pair<std::string, std::filesystem::path> parse_lora_module(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    fail<InvalidArgument>("--lora-modules: '{}' is not name=path", spec);
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

}  // namespace lemma
