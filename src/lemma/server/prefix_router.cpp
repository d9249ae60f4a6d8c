#include "lemma/server/prefix_router.h"

#include "lemma/base/error.h"

namespace lemma::server {

PrefixRouter::PrefixRouter(int num_replicas, int block_size, std::size_t max_blocks_per_replica,
                           RoutingPolicy policy)
    : block_size_(block_size), max_blocks_(max_blocks_per_replica), policy_(policy) {
  if (num_replicas < 1) fail<InvalidArgument>("data-parallel replicas must be >= 1, got {}", num_replicas);
  if (block_size < 1) fail<InvalidArgument>("KV block size must be >= 1, got {}", block_size);
  if (max_blocks_per_replica < 1) fail<InvalidArgument>("router history must hold >= 1 block per replica");
  histories_.resize(static_cast<std::size_t>(num_replicas));
}

void PrefixRouter::remember(History& history, const BlockHash& hash) {
  if (auto it = history.index.find(hash); it != history.index.end()) {
    history.order.splice(history.order.begin(), history.order, it->second);
    return;
  }
  history.order.push_front(hash);
  history.index.emplace(hash, history.order.begin());
  if (history.order.size() > max_blocks_) {
    history.index.erase(history.order.back());
    history.order.pop_back();
  }
}

RouteChoice PrefixRouter::route(std::span<const int32_t> prompt_ids, std::span<const uint64_t> extra_keys,
                                std::span<const int64_t> in_flight) {
  const std::size_t replicas = histories_.size();
  if (in_flight.size() != replicas) {
    fail<InvalidArgument>("router has {} replicas but got in-flight counts for {}", replicas, in_flight.size());
  }
  // The prompt's full blocks as a hash chain (the same identity the engines' prefix caches use).
  std::vector<BlockHash> chain;
  BlockHash parent = kRootBlockHash;
  const std::size_t block = static_cast<std::size_t>(block_size_);
  for (std::size_t start = 0; start + block <= prompt_ids.size(); start += block) {
    parent = hash_block(parent, prompt_ids.subspan(start, block), extra_keys);
    chain.push_back(parent);
  }

  std::lock_guard lock(mu_);
  RouteChoice choice;
  if (policy_ == RoutingPolicy::kRoundRobin) {
    choice.replica = static_cast<int>(next_round_robin_++ % replicas);
  } else {
    std::size_t best_blocks = 0;
    bool have_best = false;
    for (std::size_t r = 0; r < replicas; ++r) {
      std::size_t matched = 0;
      while (matched < chain.size() && histories_[r].index.count(chain[matched])) ++matched;
      // Ties: fewer requests in flight, then the replica remembering fewer blocks (the one whose cache
      // holds least, as SGLang's router balances), then the lower index.
      const auto best = static_cast<std::size_t>(choice.replica);
      const bool better =
          !have_best || matched > best_blocks ||
          (matched == best_blocks &&
           (in_flight[r] < in_flight[best] ||
            (in_flight[r] == in_flight[best] && histories_[r].order.size() < histories_[best].order.size())));
      if (better) {
        have_best = true;
        best_blocks = matched;
        choice.replica = static_cast<int>(r);
      }
    }
    choice.matched_tokens = static_cast<int64_t>(best_blocks * block);
  }
  // Deepest block first, so the chain's root is the most recent entry: eviction takes a chain's tail
  // before its head, and a head alone still matches.
  History& history = histories_[static_cast<std::size_t>(choice.replica)];
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) remember(history, *it);
  return choice;
}

}  // namespace lemma::server
