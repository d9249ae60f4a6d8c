#include "lemma/model/decode_plans.h"


namespace lemma {

DecodePlanCache::Step DecodePlanCache::begin(const Key& key, size_t num_slots, bool allowed) {
  Step step;
  if (!enabled || !allowed || key.rows < 1 || key.rows > kMaxRows) return step;
  if (entries_.empty()) entries_.resize(static_cast<size_t>(kMaxRows));
  Entry& entry = entries_[static_cast<size_t>(key.rows - 1)];
  step.entry_ = &entry;
  if (entry.valid && entry.key == key && entry.slots.size() == num_slots) {
    step.replay_ = true;
    ++replays_;
    return step;
  }
  entry.valid = false;  // captured again by this forward
  entry.key = key;
  entry.slots.assign(num_slots, layers::LinearGroupPlan{});
  ++captures_;
  return step;
}

layers::LinearGroupPlan& DecodePlanCache::Step::plan(size_t slot, std::span<const float> x, int64_t M,
                                                     std::span<const layers::LinearOutput> outputs,
                                                     const ThreadTeam* team,
                                                     const kernels::MatmulOptions& options) {
  if (replay_) return entry_->slots[slot];
  layers::LinearGroupPlan& out = entry_ != nullptr ? entry_->slots[slot] : scratch_;
  out = layers::plan_linear_group(x, M, outputs, team, options);
  return out;
}

void DecodePlanCache::Step::commit() {
  if (entry_ != nullptr) entry_->valid = true;
}

}  // namespace lemma
