// DraftCacheTable: the requests a cache-keeping draft source follows (DraftModelProposer,
// MtpProposer), each with its State (the source's own fields, its list of KV block ids and the call it
// was last drafted in) over one pool of block ids. A request's blocks go back when it ends (forget)
// or, when the pool runs dry, when another request needs them and it was not marked in the current
// call (it recomputes if it returns). Single-threaded (the engine thread).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace lemma::spec {

// State needs: std::vector<int32_t> blocks; uint64_t last_call; void clear_tokens() (forget what its
// blocks held).
template <typename State>
class DraftCacheTable {
 public:
  explicit DraftCacheTable(int64_t num_blocks) {
    free_.reserve(static_cast<size_t>(num_blocks));
    for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
  }

  // A new call; requests marked in it are not evicted until the next.
  void begin_call() { ++call_; }
  State& mark(uint64_t id) {
    State& st = states_[id];
    st.last_call = call_;
    return st;
  }
  State& at(uint64_t id) { return states_.at(id); }

  void forget(uint64_t id) {
    const auto it = states_.find(id);
    if (it == states_.end()) return;
    release(it->second);
    states_.erase(it);
  }

  // Grows `st` to cover `num_tokens` positions of `block_size`, evicting unmarked requests when the
  // pool is short; false (nothing taken) when it cannot.
  bool reserve(State& st, int64_t num_tokens, int64_t block_size) {
    const auto needed = static_cast<size_t>((num_tokens + block_size - 1) / block_size);
    if (st.blocks.size() >= needed) return true;
    const size_t missing = needed - st.blocks.size();
    for (auto it = states_.begin(); free_.size() < missing && it != states_.end();) {
      if (it->second.last_call != call_) {
        release(it->second);
        it = states_.erase(it);
      } else {
        ++it;
      }
    }
    if (free_.size() < missing) return false;
    for (size_t i = 0; i < missing; ++i) {
      st.blocks.push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }

  int64_t num_free_blocks() const { return static_cast<int64_t>(free_.size()); }
  size_t num_tracked() const { return states_.size(); }

 private:
  void release(State& st) {
    free_.insert(free_.end(), st.blocks.begin(), st.blocks.end());
    st.blocks.clear();
    st.clear_tokens();
  }

  std::vector<int32_t> free_;
  std::unordered_map<uint64_t, State> states_;
  uint64_t call_ = 0;
};

}  // namespace lemma::spec
