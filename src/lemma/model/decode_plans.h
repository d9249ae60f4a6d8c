// Captured decode plans (G15, the CPU form of CUDA graphs): a forward's matmul plans (arguments
// checked, kernels resolved, team tiling), kept per batch row count M <= kMaxRows in the
// workspace, so a later forward of the same M over the same buffers replays them instead of
// planning each matrix again. The key holds the model, the team and the address of every buffer
// a plan reads or writes; when any of them moved (a workspace that grew, another logits buffer)
// the forward plans afresh and captures again. Replayed plans are the plans the forward would
// make, so outputs are bitwise those of planning every step. RuntimeOptions::decode_plans turns it off.
// Part of a ForwardWorkspace: not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "lemma/model/layers/linear.h"

namespace lemma {

class DecodePlanCache {
  struct Entry;

 public:
  static constexpr int64_t kMaxRows = 64;  // batches of up to this many tokens are captured (decode)

  // What a forward's plans depend on besides the weights' dtypes and shapes (fixed per model).
  struct Key {
    uint64_t model_id = 0;
    const void* team = nullptr;
    int64_t rows = 0;        // M of the layer matmuls
    int64_t logit_rows = 0;  // M of the LM head
    std::array<const void*, 9> buffers{};  // every x and y the plans point into
    bool operator==(const Key&) const = default;
  };

  // One forward's use of the cache: replays a captured entry, captures a new one, or (batches of
  // more than kMaxRows tokens, or the cache disabled) plans every matrix as before.
  class Step {
   public:
    // The plan of matmul group `slot` (0 <= slot < the count given to begin()) over x, M, outputs:
    // the captured one when replaying, otherwise planned now (and kept when capturing).
    layers::LinearGroupPlan& plan(size_t slot, std::span<const float> x, int64_t M,
                                  std::span<const layers::LinearOutput> outputs, const ThreadTeam* team,
                                  const kernels::MatmulOptions& options);
    // Call once every slot the forward runs has been planned: the entry becomes replayable.
    void commit();

   private:
    friend class DecodePlanCache;
    Entry* entry_ = nullptr;  // null: plan into scratch_ only
    bool replay_ = false;
    layers::LinearGroupPlan scratch_;
  };

  // Starts a forward with `num_slots` matmul groups; `allowed` false (RuntimeOptions::decode_plans)
  // plans every matrix, as `enabled` false does. Allocates only when capturing a new M.
  Step begin(const Key& key, size_t num_slots, bool allowed = true);

  bool enabled = true;  // settable: tests compare both paths in one process
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }

 private:
  struct Entry {
    Key key;
    bool valid = false;  // every slot captured (commit() ran)
    std::vector<layers::LinearGroupPlan> slots;
  };
  std::vector<Entry> entries_;  // index M - 1; grown on the first capture
  int64_t captures_ = 0, replays_ = 0;
};

}  // namespace lemma
