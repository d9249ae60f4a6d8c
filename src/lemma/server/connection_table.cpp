#include "lemma/server/connection_table.h"

#include <sys/resource.h>

#include <algorithm>

namespace lemma::server {

size_t resolve_max_connections(size_t configured) {
  if (configured > 0) return configured;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1024;
  return std::clamp<size_t>(size_t(limit.rlim_cur) / 2, 16, 8192);
}

size_t ConnectionTable::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t ConnectionTable::num_idle() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : entries_) n += entry.idle ? 1 : 0;
  return n;
}

std::unique_ptr<ConnectionTable::Lease> ConnectionTable::open(Closer closer) {
  std::lock_guard lock(mu_);
  const uint64_t id = next_id_++;
  entries_[id] = Entry{std::move(closer), false, {}};
  return std::make_unique<Lease>(*this, id);
}

bool ConnectionTable::evict_idle() {
  Closer closer;
  {
    std::lock_guard lock(mu_);
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.idle && (oldest == entries_.end() || it->second.idle_since < oldest->second.idle_since)) oldest = it;
    }
    if (oldest == entries_.end()) return false;
    closer = std::move(oldest->second.closer);
    entries_.erase(oldest);
  }
  closer();  // outside the lock: it only posts to the session's strand
  return true;
}

void ConnectionTable::release(uint64_t id) {
  std::lock_guard lock(mu_);
  entries_.erase(id);
}

void ConnectionTable::set_idle(uint64_t id, bool idle) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.idle = idle;
  if (idle) it->second.idle_since = std::chrono::steady_clock::now();
}

}  // namespace lemma::server
