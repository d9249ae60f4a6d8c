// ResponseStore: the /v1/responses conversations kept for `previous_response_id`, in memory and
// bounded: at most `capacity` entries, the least recently used dropped first (0 keeps nothing).
// Thread-safe (one mutex; entries are copied in and out).
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace lemma::server {

class ResponseStore {
 public:
  explicit ResponseStore(size_t capacity) : capacity_(capacity) {}

  // Keeps `conversation` (chat messages: every input and output of the chain, no instructions)
  // under `id`, dropping the least recently used entry when full.
  void put(const std::string& id, nlohmann::ordered_json conversation);
  // The conversation kept under `id` (now the most recently used), or nullopt.
  std::optional<nlohmann::ordered_json> get(const std::string& id);
  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<std::string, nlohmann::ordered_json>;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace lemma::server
