// PrefixRouter: which data-parallel replica takes a request. Each replica has its own KV cache and
// prefix cache, so a prompt is fastest where its prefix was computed before. The router keeps, per
// replica, the chain hashes of the full KV blocks of prompts it sent there (a bounded LRU: an
// approximate view of that replica's prefix cache, as SGLang's router keeps), routes a request to the
// replica sharing the longest run of leading blocks, and breaks ties (and no match) by the fewest
// requests in flight, then the smallest history. Round-robin is the baseline policy. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "lemma/kv/block_hash.h"

namespace lemma::server {

enum class RoutingPolicy { kPrefix, kRoundRobin };

struct RouteChoice {
  int replica = 0;
  int64_t matched_tokens = 0;  // leading prompt tokens the chosen replica is believed to hold
};

class PrefixRouter {
 public:
  // `block_size`: the engines' KV block size (only full blocks are cached and matched).
  // `max_blocks_per_replica`: how many block hashes each replica's history keeps (LRU).
  PrefixRouter(int num_replicas, int block_size, std::size_t max_blocks_per_replica, RoutingPolicy policy);

  // Picks a replica for `prompt_ids` (`extra_keys`, e.g. the adapter identity, salt the hashes as the
  // prefix cache does) given each replica's requests in flight, and records the prompt's blocks there.
  RouteChoice route(std::span<const int32_t> prompt_ids, std::span<const uint64_t> extra_keys,
                    std::span<const int64_t> in_flight);

  int num_replicas() const { return static_cast<int>(histories_.size()); }

 private:
  // One replica's remembered blocks, most recently routed first.
  struct History {
    std::list<BlockHash> order;
    std::unordered_map<BlockHash, std::list<BlockHash>::iterator, BlockHashHasher> index;
  };
  void remember(History& history, const BlockHash& hash);

  const int block_size_;
  const std::size_t max_blocks_;
  const RoutingPolicy policy_;
  std::mutex mu_;
  std::vector<History> histories_;
  std::size_t next_round_robin_ = 0;
};

}  // namespace lemma::server
