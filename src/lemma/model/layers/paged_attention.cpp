#include "lemma/model/layers/paged_attention.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <limits>

#include "lemma/kernels/attention/flash_attention.h"

namespace lemma::layers {

namespace {

using kernels::kFlashSplitKeys;

// Sequences with at most this many new tokens (decode, speculative verification) compute every
// split as its own work item and fold the partials afterwards; longer ones give each work item a
// block of kQueryBlock query rows that folds its splits as it goes. Both fold in split order,
// so the choice never changes a result, only the parallelism. Token trees always take splits.
constexpr int64_t kSplitModeMaxTokens = 8;
constexpr int64_t kQueryBlock = 16;
// Below this many (token, head) folds, phase 2 runs on the calling thread.
constexpr int64_t kMinFoldItemsPerTeam = 256;

struct SequencePlan {
  bool split_mode = false;
  int64_t sink_units = 0;   // 1 when a streaming sequence's sink pass is unit 0 (split mode)
  int64_t first_split = 0;  // splits [first_split, end_split) hold keys some query sees
  int64_t end_split = 0;
  int64_t num_units = 0;    // per KV head: splits (split mode) or query blocks
  int64_t scratch_floats = 0;
};

int64_t first_visible_key(int64_t position, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, position - window + 1) : 0;
}

// The sliding window of a sequence's split passes: its streaming window, else the layer's.
int64_t window_of(const AttentionSequence& s, const AttentionParams& p) {
  return s.streaming.enabled() ? s.streaming.window : p.sliding_window;
}

SequencePlan plan_sequence(const AttentionSequence& s, const AttentionParams& p, int64_t head_dim) {
  SequencePlan plan;
  if (s.num_tokens <= 0) return plan;
  const int64_t first_pos = s.context_length - s.num_tokens;
  plan.split_mode = s.num_tokens <= kSplitModeMaxTokens || s.tree != nullptr;
  plan.first_split = first_visible_key(first_pos, window_of(s, p)) / kFlashSplitKeys;
  // A tree's keys end at its deepest node's position, which its slots (context_length) may pass.
  const int64_t key_end = s.tree != nullptr ? s.tree->end_position() : s.context_length;
  plan.end_split = (key_end - 1) / kFlashSplitKeys + 1;
  const int64_t ps = kernels::flash_partial_stride(head_dim);
  if (plan.split_mode) {
    plan.sink_units = s.streaming.enabled() ? 1 : 0;
    plan.num_units = plan.sink_units + plan.end_split - plan.first_split;
    plan.scratch_floats = plan.num_units * s.num_tokens * p.num_heads * ps;  // [split, kv head, row, group, ps]
  } else {
    plan.num_units = (s.num_tokens + kQueryBlock - 1) / kQueryBlock;
    plan.scratch_floats = plan.num_units * 2 * kQueryBlock * p.num_heads * ps;  // [kv head, block, 2, row, group, ps]
  }
  return plan;
}

// What every work item shares.
struct Job {
  std::span<const float> q;
  const KvLayerView& cache;
  const AttentionParams& p;
  kernels::Isa isa;
  int64_t group;
  int64_t ps;  // partial stride
};

kernels::FlashSplitArgs split_args(const Job& job, const AttentionSequence& s, int64_t kv_head, int64_t row_begin,
                                   int64_t num_rows, int64_t split, float* partial, kernels::KernelScratch* kernel_scratch) {
  const KvLayerView& c = job.cache;
  const int64_t hd = c.head_dim;
  kernels::FlashSplitArgs a{};
  a.q = job.q.data() + ((s.token_offset + row_begin) * job.p.num_heads + kv_head * job.group) * hd;
  a.q_row_stride = job.p.num_heads * hd;
  a.num_rows = num_rows;
  a.group = job.group;
  a.head_dim = hd;
  a.first_position = s.context_length - s.num_tokens + row_begin;
  a.sliding_window = window_of(s, job.p);
  a.key_begin = split * kFlashSplitKeys;
  a.key_end = std::min((split + 1) * kFlashSplitKeys, s.context_length);
  a.scale = job.p.scale;
  const int64_t head_bytes = kv_head * hd * kernels::kv_element_bytes(c.dtype);
  a.keys = static_cast<const char*>(c.keys) + head_bytes;
  a.values = static_cast<const char*>(c.values) + head_bytes;
  a.block_table = s.block_table.data();
  a.block_size = c.block_size;
  a.token_stride = c.token_stride();
  a.kv_dtype = c.dtype;
  if (c.key_scales != nullptr) {
    a.key_scales = c.key_scales + kv_head;
    a.value_scales = c.value_scales + kv_head;
    a.scale_stride = c.num_kv_heads;
  }
  a.partial = partial;
  a.scratch = kernel_scratch;
  return a;
}

// One split of a token tree from the first split its nodes read through their own slot tables on
// (TreeKeys): a kernel call per node, as the node's path run as a chain would make for its row.
// The keys are the chain's at the chain's positions, only moved down by tree.key_begin, a multiple
// of the split size, so every cut the kernels make (splits, 256-key chunks, 16-key tiles, counted
// from key_begin or from absolute multiples of 16) falls on the same keys; key_end stops at the
// node's own position, and keys past a row's position never change its result.
void run_tree_split(const Job& job, const AttentionSequence& s, int64_t kv_head, int64_t split, float* partial,
                    kernels::KernelScratch* kernel_scratch) {
  const TreeKeys& tree = *s.tree;
  const int64_t begin = split * kFlashSplitKeys;
  for (int64_t r = 0; r < s.num_tokens; ++r) {
    float* row_partial = partial + r * job.group * job.ps;
    const int64_t position = tree.positions[static_cast<size_t>(r)];
    const int64_t end = std::min(begin + kFlashSplitKeys, position + 1);
    if (end <= begin) {  // the node sees no key of this split
      for (int64_t g = 0; g < job.group; ++g) {
        float* part = row_partial + g * job.ps;
        part[0] = -std::numeric_limits<float>::infinity();
        std::fill(part + 1, part + job.ps, 0.0f);
      }
      continue;
    }
    kernels::FlashSplitArgs a = split_args(job, s, kv_head, r, 1, split, row_partial, kernel_scratch);
    a.first_position = position - tree.key_begin;
    a.key_begin = begin - tree.key_begin;
    a.key_end = end - tree.key_begin;
    a.block_table = tree.slots.data() + r * tree.key_span;  // key -> slot, as blocks of one token
    a.block_size = 1;
    kernels::flash_attention_split(a, job.isa);
  }
}

// The sink pass of a streaming sequence (G10) for rows [row_begin, row_begin + rows): each row's
// sink_q against the sinks its window pass does not reach, keys [0, sink_pass_keys(t)), at the
// sink query position; partial row r - row_begin as a split's. A row with no such key gets the
// empty partial, which every fold skips.
void run_sink_pass(const Job& job, const AttentionSequence& s, int64_t kv_head, int64_t row_begin, int64_t rows,
                   float* partial, kernels::KernelScratch* kernel_scratch) {
  const int64_t hd = job.cache.head_dim;
  for (int64_t r = row_begin; r < row_begin + rows; ++r) {
    float* row_partial = partial + (r - row_begin) * job.group * job.ps;
    const int64_t position = s.context_length - s.num_tokens + r;
    const int64_t keys = s.streaming.sink_pass_keys(position);
    if (keys == 0) {
      for (int64_t g = 0; g < job.group; ++g) {
        float* part = row_partial + g * job.ps;
        part[0] = -std::numeric_limits<float>::infinity();
        std::fill(part + 1, part + job.ps, 0.0f);
      }
      continue;
    }
    kernels::FlashSplitArgs a = split_args(job, s, kv_head, r, 1, 0, row_partial, kernel_scratch);
    a.q = s.sink_q + ((r * job.p.num_heads) + kv_head * job.group) * hd;
    a.first_position = s.streaming.sink_query_position(position);
    a.sliding_window = 0;
    a.key_begin = 0;
    a.key_end = keys;
    kernels::flash_attention_split(a, job.isa);
  }
}

// A query block of a long sequence: every split it sees, folded in order, then normalised into out.
void run_query_block(const Job& job, const AttentionSequence& s, const SequencePlan& plan, int64_t kv_head,
                     int64_t block, float* seq_scratch, std::span<float> out, kernels::KernelScratch* kernel_scratch) {
  const int64_t hd = job.cache.head_dim;
  const int64_t row_begin = block * kQueryBlock, rows = std::min(kQueryBlock, s.num_tokens - row_begin);
  const int64_t queries = rows * job.group;
  float* total = seq_scratch + (kv_head * plan.num_units + block) * 2 * kQueryBlock * job.group * job.ps;
  float* part = total + kQueryBlock * job.group * job.ps;
  for (int64_t i = 0; i < queries; ++i) {
    total[i * job.ps] = -std::numeric_limits<float>::infinity();
    total[i * job.ps + 1] = 0.0f;
  }
  if (s.streaming.enabled()) {  // the sinks first, as split mode's unit 0
    run_sink_pass(job, s, kv_head, row_begin, rows, part, kernel_scratch);
    for (int64_t i = 0; i < queries; ++i) kernels::flash_merge(total + i * job.ps, part + i * job.ps, hd);
  }
  const int64_t first_pos = s.context_length - s.num_tokens + row_begin;
  const int64_t split_begin = first_visible_key(first_pos, window_of(s, job.p)) / kFlashSplitKeys;
  const int64_t split_end = (first_pos + rows - 1) / kFlashSplitKeys + 1;
  for (int64_t split = split_begin; split < split_end; ++split) {
    kernels::flash_attention_split(split_args(job, s, kv_head, row_begin, rows, split, part, kernel_scratch), job.isa);
    for (int64_t i = 0; i < queries; ++i) kernels::flash_merge(total + i * job.ps, part + i * job.ps, hd);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < job.group; ++g) {
      const int64_t head = kv_head * job.group + g;
      kernels::flash_finish(total + (r * job.group + g) * job.ps, hd,
                            out.data() + ((s.token_offset + row_begin + r) * job.p.num_heads + head) * hd);
    }
}

// Phase 1's work items in (sequence, KV head, unit) order, visited from the last to the first:
// at(index) needs index <= the previous call's, so one thread's walk over the sequences is a
// single backward pass however many items it takes.
struct Item {
  int64_t sequence = 0, kv_head = 0, unit = 0;
  SequencePlan plan;
  int64_t scratch_offset = 0;
};

class ItemCursor {
 public:
  ItemCursor(std::span<const AttentionSequence> sequences, const AttentionParams& p, int64_t nkv, int64_t head_dim,
             int64_t total_items, int64_t total_scratch)
      : sequences_(sequences), p_(p), nkv_(nkv), head_dim_(head_dim), sequence_(static_cast<int64_t>(sequences.size())),
        first_item_(total_items), scratch_offset_(total_scratch) {}

  Item at(int64_t index) {
    while (index < first_item_) {  // step back to the sequence holding `index`
      --sequence_;
      plan_ = plan_sequence(sequences_[static_cast<size_t>(sequence_)], p_, head_dim_);
      first_item_ -= nkv_ * plan_.num_units;
      scratch_offset_ -= plan_.scratch_floats;
    }
    const int64_t local = index - first_item_;
    return {sequence_, local / plan_.num_units, local % plan_.num_units, plan_, scratch_offset_};
  }

 private:
  std::span<const AttentionSequence> sequences_;
  const AttentionParams& p_;
  int64_t nkv_, head_dim_;
  int64_t sequence_;        // the sequence of the current position (size() before the first call)
  int64_t first_item_;      // index of its first item
  int64_t scratch_offset_;  // floats before its scratch
  SequencePlan plan_;
};

// Calls fn(thread, n, worker) for thread 0..size-1 of the team (or 0 inline); each thread takes
// items i with i % n == thread, which balances causal prefill blocks of growing cost. `worker` is
// the team thread that runs the call (ThreadTeam's worker index: the one whose scratch it may use).
template <typename Fn>
void for_each_thread(ThreadTeam* team, Fn&& fn) {
  if (team == nullptr || team->size() == 1) {
    fn(0, 1, 0);
    return;
  }
  const int64_t n = team->size();
  team->parallel_for(n, 1, [&](int64_t begin, int64_t end, int worker) {
    for (int64_t t = begin; t < end; ++t) fn(t, n, worker);
  });
}

}  // namespace

int64_t paged_attention_scratch_floats(std::span<const AttentionSequence> sequences, const AttentionParams& params,
                                       int64_t head_dim) {
  int64_t total = 0;
  for (const AttentionSequence& s : sequences) total += plan_sequence(s, params, head_dim).scratch_floats;
  return total;
}

void paged_attention(std::span<const float> q, const KvLayerView& cache, std::span<const AttentionSequence> sequences,
                     const AttentionParams& p, std::span<float> scratch, std::span<float> out, ThreadTeam* team,
                     kernels::Isa isa, std::span<kernels::KernelScratch> kernel_scratch) {
  assert(p.num_heads % cache.num_kv_heads == 0);
  assert(p.sliding_window == 0 || std::none_of(sequences.begin(), sequences.end(),
                                               [](const AttentionSequence& s) { return s.tree != nullptr; }));
  assert(std::none_of(sequences.begin(), sequences.end(), [&](const AttentionSequence& s) {
    return s.streaming.enabled() && (s.tree != nullptr || s.sink_q == nullptr || p.sliding_window > 0);
  }));
  assert(static_cast<int64_t>(scratch.size()) >= paged_attention_scratch_floats(sequences, p, cache.head_dim));
  const int64_t hd = cache.head_dim, nkv = cache.num_kv_heads;
  const Job job{q, cache, p, isa, p.num_heads / nkv, kernels::flash_partial_stride(hd)};

  // Phase 1: work items (sequence, KV head, split or query block), claimed one at a time by
  // whichever thread is free, last item first: a prefill's later query blocks see more keys and a
  // sequence's last split is the short one, so taking them first (largest first, then the rest
  // as threads free up) keeps the threads within one item of each other. Each thread's claims
  // only go down, so its cursor walks the sequences once.
  int64_t items = 0, total_scratch = 0;
  for (const AttentionSequence& s : sequences) {
    const SequencePlan plan = plan_sequence(s, p, hd);
    items += nkv * plan.num_units;
    total_scratch += plan.scratch_floats;
  }
  std::atomic<int64_t> next_claim{0};
  assert(kernel_scratch.empty() || team == nullptr || kernel_scratch.size() >= static_cast<size_t>(team->size()));
  for_each_thread(items > 1 ? team : nullptr, [&](int64_t, int64_t, int worker) {
    kernels::KernelScratch* own = kernel_scratch.empty() ? nullptr : &kernel_scratch[static_cast<size_t>(worker)];
    ItemCursor cursor(sequences, p, nkv, hd, items, total_scratch);
    for (int64_t t; (t = next_claim.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const Item it = cursor.at(items - 1 - t);
      const AttentionSequence& s = sequences[static_cast<size_t>(it.sequence)];
      float* seq_scratch = scratch.data() + it.scratch_offset;
      if (!it.plan.split_mode) {
        run_query_block(job, s, it.plan, it.kv_head, it.unit, seq_scratch, out, own);
        continue;
      }
      float* partial = seq_scratch + (it.unit * nkv + it.kv_head) * s.num_tokens * job.group * job.ps;
      if (it.unit < it.plan.sink_units) {
        run_sink_pass(job, s, it.kv_head, 0, s.num_tokens, partial, own);
        continue;
      }
      const int64_t split = it.plan.first_split + it.unit - it.plan.sink_units;
      // A tree's splits before its slot tables hold cached keys only, which every node sees whole.
      if (s.tree != nullptr && split >= s.tree->key_begin / kFlashSplitKeys) {
        run_tree_split(job, s, it.kv_head, split, partial, own);
        continue;
      }
      kernels::flash_attention_split(split_args(job, s, it.kv_head, 0, s.num_tokens, split, partial, own), isa);
    }
  });

  // Phase 2: short sequences fold their split partials in split order, per (token, head). Cheap
  // (a few head_dim-long folds per item), so small batches skip the team's wake-up.
  int64_t fold_items = 0;
  for (const AttentionSequence& s : sequences)
    if (plan_sequence(s, p, hd).split_mode) fold_items += s.num_tokens * p.num_heads;
  if (fold_items == 0) return;
  for_each_thread(fold_items >= kMinFoldItemsPerTeam ? team : nullptr, [&](int64_t thread, int64_t num_threads, int) {
    int64_t item = 0, offset = 0;
    for (const AttentionSequence& s : sequences) {
      const SequencePlan plan = plan_sequence(s, p, hd);
      float* seq_scratch = scratch.data() + offset;
      offset += plan.scratch_floats;
      if (!plan.split_mode) continue;
      const int64_t split_stride = s.num_tokens * p.num_heads * job.ps;
      for (int64_t r = 0; r < s.num_tokens; ++r)
        for (int64_t head = 0; head < p.num_heads; ++head, ++item) {
          if (item % num_threads != thread) continue;
          // Partial (split u, kv head h, row r, g) sits at ((u * nkv + h) * rows + r) * group + g.
          float* total = seq_scratch + ((head / job.group) * s.num_tokens * job.group + r * job.group +
                                        head % job.group) * job.ps;
          for (int64_t u = 1; u < plan.num_units; ++u) kernels::flash_merge(total, total + u * split_stride, hd);
          kernels::flash_finish(total, hd, out.data() + ((s.token_offset + r) * p.num_heads + head) * hd);
        }
    }
  });
}

void paged_attention(std::span<const float> q, const KvLayerView& cache, std::span<const AttentionSequence> sequences,
                     const AttentionParams& params, std::span<float> scratch, std::span<float> out,
                     ThreadTeam* team) {
  paged_attention(q, cache, sequences, params, scratch, out, team, kernels::detected_isa());
}

}  // namespace lemma::layers
