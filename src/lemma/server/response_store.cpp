#include "lemma/server/response_store.h"

namespace lemma::server {

void ResponseStore::put(const std::string& id, nlohmann::ordered_json conversation) {
  if (capacity_ == 0) return;
  std::lock_guard lock(mu_);
  if (auto it = index_.find(id); it != index_.end()) {
    order_.erase(it->second);
    index_.erase(it);
  }
  order_.emplace_front(id, std::move(conversation));
  index_[id] = order_.begin();
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

std::optional<nlohmann::ordered_json> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mu_);
  return order_.size();
}

}  // namespace lemma::server
