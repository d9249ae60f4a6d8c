#include "lemma/model/lora/lora_delta.h"

#include <algorithm>

#include "lemma/kernels/matmul.h"

namespace lemma {

namespace {

// Output columns per expand tile: its [rank, 256] slice of Bt (16 KiB at rank 16) stays in L1
// across the segment's rows, and a decode step's few rows still give every thread several tiles.
constexpr int64_t kExpandColumns = 256;
constexpr int64_t kBlock = 16;  // outputs accumulated in registers at once

}  // namespace

void add_lora_deltas(int64_t layer, std::span<const float> x, int64_t K, std::span<const LoraSegment> segments,
                     std::span<const LoraOutput> outputs, ThreadTeam* team, kernels::Isa isa, LoraScratch& scratch) {
  auto& tasks = scratch.tasks;
  auto& chunks = scratch.chunks;
  tasks.clear();
  chunks.clear();
  size_t shrunk_size = 0;
  for (const LoraSegment& seg : segments) {
    for (const LoraOutput& out : outputs) {
      const LoraMatrices* m = seg.adapter->find(layer, out.target);
      if (m == nullptr || seg.rows == 0) continue;
      const int64_t n = m->out_features();
      tasks.push_back({seg.row0, seg.rows, m, out.y.data(), n, shrunk_size});
      shrunk_size += static_cast<size_t>(seg.rows * m->rank);
      for (int64_t n0 = 0; n0 < n; n0 += kExpandColumns) chunks.push_back({tasks.size() - 1, n0, std::min(n, n0 + kExpandColumns)});
    }
  }
  if (tasks.empty()) return;
  if (scratch.shrunk.size() < shrunk_size) scratch.shrunk.resize(shrunk_size);
  const kernels::MatmulOptions options{isa, kernels::MatmulPrecision::kF32Activations, kernels::ActivationPolicy::kF32};

  // Shrink: [rows, K] . A^T -> [rows, rank], one tile per task.
  const auto shrink = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const auto& task = tasks[static_cast<size_t>(t)];
      kernels::matmul(x.data() + task.row0 * K, K, task.rows, task.matrices->a, scratch.shrunk.data() + task.shrunk,
                      task.matrices->rank, nullptr, options);
    }
  };
  const auto num_tasks = static_cast<int64_t>(tasks.size());
  if (team != nullptr) {
    team->parallel_tiles(num_tasks, 1, shrink);
  } else {
    shrink(0, num_tasks);
  }

  // Expand: y[row, n0:n1] += sum_r shrunk[row, r] * Bt[r, n0:n1], r in order (each element's sum
  // runs the same way whatever the batch, the chunking or the thread: batch invariant). Rank-long
  // dot products make poor matmul kernels (K = 16 runs at a tenth of their speed); these are
  // contiguous multiply-adds over a chunk of Bt that stays in L1 for every row of the segment.
  const auto expand = [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const auto& chunk = chunks[static_cast<size_t>(c)];
      const auto& task = tasks[chunk.task];
      const int64_t rank = task.matrices->rank, width = chunk.n1 - chunk.n0;
      const float* bt = task.matrices->bt.as<float>() + chunk.n0;
      for (int64_t row = 0; row < task.rows; ++row) {
        float* y = task.y + (task.row0 + row) * task.n + chunk.n0;
        const float* s = scratch.shrunk.data() + task.shrunk + static_cast<size_t>(row * rank);
        // 16 outputs at a time held in registers across the rank (the compiler vectorises acc).
        int64_t j = 0;
        for (; j + kBlock <= width; j += kBlock) {
          float acc[kBlock];
          for (int64_t k = 0; k < kBlock; ++k) acc[k] = y[j + k];
          for (int64_t r = 0; r < rank; ++r) {
            const float sr = s[r];
            const float* b = bt + r * task.n + j;
            for (int64_t k = 0; k < kBlock; ++k) acc[k] += sr * b[k];
          }
          for (int64_t k = 0; k < kBlock; ++k) y[j + k] = acc[k];
        }
        for (; j < width; ++j) {
          float acc = y[j];
          for (int64_t r = 0; r < rank; ++r) acc += s[r] * bt[r * task.n + j];
          y[j] = acc;
        }
      }
    }
  };
  const auto num_chunks = static_cast<int64_t>(chunks.size());
  if (team != nullptr) {
    team->parallel_tiles(num_chunks, 1, expand);
  } else {
    expand(0, num_chunks);
  }
}

void lora_segments(std::span<const LoraAdapter* const> adapters, std::span<const int64_t> num_tokens,
                   std::vector<LoraSegment>& out) {
  int64_t row = 0;
  for (size_t s = 0; s < adapters.size(); ++s) {
    const LoraAdapter* a = adapters[s];
    if (a != nullptr && num_tokens[s] > 0) {
      if (!out.empty() && out.back().adapter == a && out.back().row0 + out.back().rows == row) {
        out.back().rows += num_tokens[s];
      } else {
        out.push_back({row, num_tokens[s], a});
      }
    }
    row += num_tokens[s];
  }
}

}  // namespace lemma
