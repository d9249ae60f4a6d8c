// The LoRA part of a linear over a mixed-adapter batch (G29, Punica/S-LoRA's segmented
// shrink/expand): after the base matmul has written y = x . W^T for every token of the step, each
// segment of token rows that runs on an adapter adds (x_seg . A^T) . B^T (B carries the scaling),
// with the adapter's own rank (no padding to the largest). Two team jobs per linear group, whatever
// the number of adapters: all shrinks (one tile per segment and matrix), then all expands (tiles of
// output columns, each added into y by the thread that computed it). Rows without an adapter are
// untouched. Not thread-safe (one scratch per forward).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/kernels/isa.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/model/thread_team.h"

namespace lemma {

// Token rows [row0, row0 + rows) of the step run on `adapter`.
struct LoraSegment {
  int64_t row0 = 0;
  int64_t rows = 0;
  const LoraAdapter* adapter = nullptr;
};

// One linear of a group: its target and its output y [M, N] (N = the base weight's rows).
struct LoraOutput {
  LoraTarget target = LoraTarget::kQ;
  std::span<float> y;
};

// What the jobs reuse across calls (grown, never shrunk).
struct LoraScratch {
  struct Task {
    int64_t row0 = 0, rows = 0;
    const LoraMatrices* matrices = nullptr;
    float* y = nullptr;
    int64_t n = 0;          // y's row length
    size_t shrunk = 0;      // offset of its [rows, rank] in `shrunk`
  };
  struct Chunk {
    size_t task = 0;
    int64_t n0 = 0, n1 = 0;
  };
  std::vector<Task> tasks;
  std::vector<Chunk> chunks;
  std::vector<float> shrunk;  // x_seg . A^T of every task
};

// y_i[rows of each segment] += (x[rows] . A^T) . B^T for every output whose target the segment's
// adapter adapts in `layer`. x: [M, K] f32 row-major. Kernels of `isa`, f32 activations.
void add_lora_deltas(int64_t layer, std::span<const float> x, int64_t K, std::span<const LoraSegment> segments,
                     std::span<const LoraOutput> outputs, ThreadTeam* team, kernels::Isa isa, LoraScratch& scratch);

// The segments of a batch given each sequence's adapter (null: none) and token count: maximal runs
// of consecutive sequences on the same adapter, sequences without one left out. Appends to `out`.
void lora_segments(std::span<const LoraAdapter* const> adapters, std::span<const int64_t> num_tokens,
                   std::vector<LoraSegment>& out);

}  // namespace lemma
