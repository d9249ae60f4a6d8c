// Engine's side of prefill/decode disaggregation (G24): exporting cached prompt blocks and filing
// received ones in the prefix cache. Both run between steps on the engine's thread.
#include <algorithm>

#include "lemma/engine/engine.h"

namespace lemma {

int32_t Engine::num_cached_prefix_blocks(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys) const {
  return static_cast<int32_t>(scheduler_.kv().cached_prefix_blocks(token_ids, extra_keys).size());
}

KvHandoff Engine::export_prefix(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys,
                                int32_t first_block) {
  KvHandoff handoff;
  handoff.extra_keys.assign(extra_keys.begin(), extra_keys.end());
  const auto block_size = static_cast<size_t>(scheduler_.kv().block_size());
  const size_t num_full = token_ids.size() / block_size;
  const size_t first = std::min(static_cast<size_t>(std::max(0, first_block)), num_full);
  handoff.first_block = static_cast<int32_t>(first);
  const std::vector<BlockId> held = scheduler_.kv().cached_prefix_blocks(token_ids, extra_keys);
  const size_t end = std::min(std::max(first, held.size()), num_full);
  handoff.token_ids.assign(token_ids.begin(), token_ids.begin() + static_cast<std::ptrdiff_t>(end * block_size));
  const std::span<const BlockId> carried = first < held.size() ? std::span(held).subspan(first) : std::span<const BlockId>{};
  if (!carried.empty()) handoff.blocks = runner_.export_blocks(carried);
  return handoff;
}

int32_t Engine::import_prefix(KvHandoff& handoff) {
  if (handoff.num_blocks() == 0) return 0;
  KvManager& kv = scheduler_.kv_for_handoff();
  if (num_cached_prefix_blocks(handoff.token_ids, handoff.extra_keys) < handoff.first_block) return 0;
  const int32_t num_blocks = handoff.first_block + handoff.num_blocks();
  const auto targets = kv.begin_import(handoff.token_ids, handoff.extra_keys, num_blocks);
  if (!targets) return 0;
  // Blocks before first_block are held here (checked above), so begin_import asks only for carried ones.
  const std::span<const BlockId> carried_targets = std::span(*targets).subspan(static_cast<size_t>(handoff.first_block));
  runner_.import_blocks(handoff.blocks, carried_targets);
  kv.finish_import(*targets);
  return static_cast<int32_t>(std::count_if(carried_targets.begin(), carried_targets.end(), [](BlockId b) { return b >= 0; }));
}

}  // namespace lemma
