// ConnectionTable: the server's open connections, capped (`max_connections`). A connection waiting
// for its next keep-alive request is idle and may be evicted to make room for a new one; the
// longest-idle goes first. Thread-safe: the accept loop and every session's strand use it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace lemma::server {

// `configured`, or (0) half of RLIMIT_NOFILE's soft limit within [16, 8192].
size_t resolve_max_connections(size_t configured);

class ConnectionTable {
 public:
  // What a session gives the table: a way to close it from another thread (posts to its strand).
  using Closer = std::function<void()>;

  class Lease {  // one open connection; releases its place when destroyed
   public:
    Lease(ConnectionTable& table, uint64_t id) : table_(table), id_(id) {}
    ~Lease() { table_.release(id_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Idle: between requests on a keep-alive connection, so it may be evicted.
    void set_idle(bool idle) { table_.set_idle(id_, idle); }

   private:
    ConnectionTable& table_;
    uint64_t id_;
  };

  explicit ConnectionTable(size_t capacity) : capacity_(capacity) {}
  size_t capacity() const { return capacity_; }
  size_t size() const;
  size_t num_idle() const;  // keep-alive connections waiting for their next request
  bool is_full() const { return size() >= capacity_; }
  // Registers a connection (the caller checked room first; the count may pass the cap briefly).
  std::unique_ptr<Lease> open(Closer closer);
  // Closes the longest-idle connection and forgets it at once; false when none is idle.
  bool evict_idle();

 private:
  struct Entry {
    Closer closer;
    bool idle = false;
    std::chrono::steady_clock::time_point idle_since;
  };
  void release(uint64_t id);
  void set_idle(uint64_t id, bool idle);

  const size_t capacity_;
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_id_ = 0;
};

}  // namespace lemma::server
