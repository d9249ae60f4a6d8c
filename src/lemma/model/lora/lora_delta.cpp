#include "lemma/model/lora/lora_delta.h"

#include <algorithm>

#include "lemma/kernels/matmul.h"

namespace lemma {

namespace {

// Output columns per expand tile: a multiple of 16 (the f32 kernels' register tiles), small enough
// that a decode step's few rows still give every thread several tiles.
constexpr int64_t kExpandColumns = 256;

}  // namespace

void add_lora_deltas(int64_t layer, std::span<const float> x, int64_t K, std::span<const LoraSegment> segments,
                     std::span<const LoraOutput> outputs, ThreadTeam* team, kernels::Isa isa, LoraScratch& scratch) {
  auto& tasks = scratch.tasks;
  auto& chunks = scratch.chunks;
  tasks.clear();
  chunks.clear();
  size_t shrunk_size = 0;
  int64_t max_rows = 0;
  for (const LoraSegment& seg : segments) {
    for (const LoraOutput& out : outputs) {
      const LoraMatrices* m = seg.adapter->find(layer, out.target);
      if (m == nullptr || seg.rows == 0) continue;
      const int64_t n = m->b.shape[0];
      tasks.push_back({seg.row0, seg.rows, m, out.y.data(), n, shrunk_size});
      shrunk_size += static_cast<size_t>(seg.rows * m->rank);
      max_rows = std::max(max_rows, seg.rows);
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

  // Expand: [rows, rank] . B[n0:n1]^T into the worker's buffer, then added into y's columns n0..n1.
  const size_t workers = team != nullptr ? static_cast<size_t>(team->size()) : 1;
  if (scratch.per_worker.size() < workers) scratch.per_worker.resize(workers);
  for (size_t w = 0; w < workers; ++w)
    if (scratch.per_worker[w].size() < static_cast<size_t>(max_rows * kExpandColumns))
      scratch.per_worker[w].resize(static_cast<size_t>(max_rows * kExpandColumns));
  const auto expand = [&](int64_t c0, int64_t c1, int worker) {
    float* buffer = scratch.per_worker[static_cast<size_t>(worker)].data();
    for (int64_t c = c0; c < c1; ++c) {
      const auto& chunk = chunks[static_cast<size_t>(c)];
      const auto& task = tasks[chunk.task];
      const int64_t rank = task.matrices->rank, width = chunk.n1 - chunk.n0;
      TensorView b_rows = task.matrices->b;  // rows n0..n1 of B (the kernels are invariant to splitting N)
      b_rows.data = task.matrices->b.as<float>() + chunk.n0 * rank;
      b_rows.shape = Shape{width, rank};
      kernels::matmul(scratch.shrunk.data() + task.shrunk, rank, task.rows, b_rows, buffer, width, nullptr, options);
      for (int64_t r = 0; r < task.rows; ++r) {
        float* y = task.y + (task.row0 + r) * task.n + chunk.n0;
        const float* d = buffer + r * width;
        for (int64_t j = 0; j < width; ++j) y[j] += d[j];
      }
    }
  };
  const auto num_chunks = static_cast<int64_t>(chunks.size());
  if (team != nullptr) {
    team->parallel_tiles(num_chunks, 1, expand);
  } else {
    expand(0, num_chunks, 0);
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
