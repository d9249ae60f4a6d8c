#include "lemma/model/decode_plans.h"

#include <cstdlib>
#include <string_view>

#include "lemma/base/logging.h"

namespace lemma {

bool decode_plans_enabled_by_default() {
  static const bool enabled = [] {
    const char* env = std::getenv("LEMMA_DECODE_PLANS");
    const bool off = env != nullptr && std::string_view(env) == "0";
    if (off) log().info("model: decode plans off (LEMMA_DECODE_PLANS=0): every forward plans its matmuls");
    return !off;
  }();
  return enabled;
}

DecodePlanCache::Step DecodePlanCache::begin(const Key& key, size_t num_slots) {
  Step step;
  if (!enabled || key.rows < 1 || key.rows > kMaxRows) return step;
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
                                                     const ThreadTeam* team) {
  if (replay_) return entry_->slots[slot];
  layers::LinearGroupPlan& out = entry_ != nullptr ? entry_->slots[slot] : scratch_;
  out = layers::plan_linear_group(x, M, outputs, team);
  return out;
}

void DecodePlanCache::Step::commit() {
  if (entry_ != nullptr) entry_->valid = true;
}

}  // namespace lemma
