// SimRunner: a stand-in for the model runner in scheduler tests. It keeps its own view of each request
// (tokens, block table) built only from StepPlans, stores (token, position) in simulated device and host
// KV blocks, performs the plan's swap and copy-on-write copies, and "samples" the next token as a hash
// of the context it reads back through the block table. A wrong table, a missing copy or a stale prefix
// block changes the context it reads and so the tokens it produces. With a sliding window the model
// sees only the last `window` tokens, and a read of a dropped (kNoBlock) entry counts as a mismatch.
// Single-threaded test helper.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "lemma/sched/step_plan.h"

namespace lemma::test {

// The deterministic "model": next token from the context (its last `window` tokens when window > 0)
// and a per-request seed.
inline int32_t sim_next_token(std::span<const int32_t> context, uint64_t seed, int32_t vocab_size,
                              int64_t window = 0) {
  if (window > 0 && static_cast<int64_t>(context.size()) > window) context = context.last(static_cast<size_t>(window));
  uint64_t h = 0x9e3779b97f4a7c15ull ^ seed;
  for (int32_t t : context) {
    h ^= static_cast<uint32_t>(t) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
  }
  h ^= h >> 31;
  return static_cast<int32_t>(h % static_cast<uint64_t>(vocab_size));
}

class SimRunner {
 public:
  SimRunner(int32_t num_device_blocks, int32_t num_host_blocks, int32_t block_size, int32_t vocab_size)
      : block_size_(block_size), vocab_size_(vocab_size),
        device_(static_cast<size_t>(num_device_blocks) * block_size, kEmpty),
        host_(static_cast<size_t>(num_host_blocks) * block_size, kEmpty) {}

  bool skip_swap_in_copies = false;  // to show the property test notices a missing copy
  bool skip_cow_copies = false;
  int64_t window = 0;                // > 0: the model attends to the last `window` positions only
  int64_t num_slot_mismatches = 0;   // slots read back that do not hold (token, position)

  StepResult run(const StepPlan& plan, const std::unordered_map<RequestId, uint64_t>& seeds) {
    for (RequestId id : plan.preempted_ids) state_.erase(id);
    for (const auto& c : plan.swap_out) copy_block(device_, c.src, host_, c.dst);
    if (!skip_swap_in_copies)
      for (const auto& c : plan.swap_in) copy_block(host_, c.src, device_, c.dst);
    if (!skip_cow_copies)
      for (const auto& c : plan.copies) copy_block(device_, c.src, device_, c.dst);
    for (const auto& n : plan.new_requests) state_[n.id] = State{n.token_ids, n.block_table};
    for (const auto& d : plan.cached_requests) {
      State& s = state_.at(d.id);
      s.tokens.insert(s.tokens.end(), d.new_token_ids.begin(), d.new_token_ids.end());
      s.table.insert(s.table.end(), d.new_block_ids.begin(), d.new_block_ids.end());
      for (const auto& r : d.replaced_blocks) s.table.at(static_cast<size_t>(r.index)) = r.block;
    }
    // Like a forward pass: every new token's K/V is written, then attention reads.
    for (const auto& s : plan.scheduled) {
      State& st = state_.at(s.id);
      for (int64_t p = s.num_computed_tokens; p < s.num_computed_tokens + s.num_new_tokens; ++p)
        slot(st, p) = encode(st.tokens.at(static_cast<size_t>(p)), p);
    }
    StepResult result;
    for (const auto& s : plan.scheduled) {
      if (!s.needs_sample) continue;
      State& st = state_.at(s.id);
      std::vector<int32_t> context;
      const int64_t end = s.num_computed_tokens + s.num_new_tokens;
      for (int64_t p = window > 0 ? std::max<int64_t>(0, end - window) : 0; p < end; ++p) {
        const int64_t v = read_slot(st, p);
        if (v != encode(st.tokens.at(static_cast<size_t>(p)), p)) ++num_slot_mismatches;
        context.push_back(static_cast<int32_t>(v >> 32));
      }
      result.sampled.push_back({s.id, {SampleResult{sim_next_token(context, seeds.at(s.id), vocab_size_, window)}}});
    }
    return result;
  }

  void forget(RequestId id) { state_.erase(id); }  // a finished request (its final output was seen)
  size_t num_tracked() const { return state_.size(); }

 private:
  static constexpr int64_t kEmpty = -1;
  struct State {
    std::vector<int32_t> tokens;
    std::vector<BlockId> table;
  };
  static int64_t encode(int32_t token, int64_t position) {
    return (static_cast<int64_t>(token) << 32) | static_cast<uint32_t>(position);
  }
  int64_t read_slot(State& st, int64_t position) {
    if (st.table.at(static_cast<size_t>(position / block_size_)) == kNoBlock) return kEmpty;
    return slot(st, position);
  }
  int64_t& slot(State& st, int64_t position) {
    const BlockId b = st.table.at(static_cast<size_t>(position / block_size_));
    return device_.at(static_cast<size_t>(b) * block_size_ + static_cast<size_t>(position % block_size_));
  }
  void copy_block(const std::vector<int64_t>& from, BlockId src, std::vector<int64_t>& to, BlockId dst) {
    for (int32_t i = 0; i < block_size_; ++i)
      to.at(static_cast<size_t>(dst) * block_size_ + i) = from.at(static_cast<size_t>(src) * block_size_ + i);
  }

  int32_t block_size_, vocab_size_;
  std::vector<int64_t> device_, host_;
  std::unordered_map<RequestId, State> state_;
};

}  // namespace lemma::test
