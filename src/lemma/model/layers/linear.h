// Linear layers over weights kept in their file dtype (usually straight over the mmap), through
// kernels::matmul (f32/f16/bf16 vectorised, GGUF quants by reference):
// y[M,N] = x[M,K] · W[N,K]^T (+ bias[N]), activations f32. Also the one-row dequantization used by the
// embedding lookup. Pure functions, no allocation;
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "lemma/kernels/matmul.h"
#include "lemma/model/layers/row_tiles.h"
#include "lemma/model/thread_team.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::layers {

// True when linear()/read_row() can use weights of this dtype.
bool is_supported_weight_dtype(DType dtype);

// x: [M, K] f32 row-major; weight: [N, K] (any supported dtype); bias: [N] f32 or empty;
// y: [M, N] f32 (overwritten). With a team, the N outputs are split across its threads (the matmul
// is invariant to that split, so the result does not depend on the thread count).
void linear(std::span<const float> x, int64_t M, const TensorView& weight, std::span<const float> bias,
            std::span<float> y, ThreadTeam* team = nullptr);

// One of several linears that read the same x (q/k/v, gate/up): y = x . weight^T (+ bias), or,
// with an input order (a GPTQ act-order matrix served with its inputs sorted by group:
// quant/hf_quantized_weights.h), y = x[:, input_order] . weight^T (+ bias).
struct LinearOutput {
  const TensorView* weight = nullptr;      // [N, K]
  std::span<const float> bias;             // [N] or empty
  std::span<float> y;                      // [M, N]
  std::span<const int32_t> input_order;    // [K], a permutation of 0 .. K-1, or empty
};

// All `outputs` (at most kMaxLinearGroup) as one team job: one dispatch and one wait instead of
// one per matrix. Each output's bits are those of linear() (the same kernels, split over N only).
inline constexpr size_t kMaxLinearGroup = 4;
void linear_group(std::span<const float> x, int64_t M, std::span<const LinearOutput> outputs, ThreadTeam* team);

// linear_group() in two halves, so a plan can be kept and run again (captured decode plans, G15):
// the matmul plans (arguments checked, kernels resolved) and the tiling over a team of a given
// size. A plan holds the addresses of x, the weights, biases and outputs: it may run again, any
// number of times, while those buffers stay where they were (their contents may change).
struct LinearGroupPlan {
  std::array<kernels::MatmulPlan, kMaxLinearGroup> plans;
  size_t count = 0;
  // The outputs' rows one after the other, each matrix's padded to a multiple of 16 (whole groups of
  // interleaved weights, and the kernels' register tiles never straddle a tile edge): matrix i
  // starts at row_offset[i]. Tiles cut that row space (row_tiles.h); no tiles: run inline (no team,
  // or one thread).
  std::array<int64_t, kMaxLinearGroup + 1> row_offset{};
  RowTiles tiles;
  // Outputs with an input order read x gathered in that order, once per distinct order per call,
  // into the run's LinearScratch (their plans' x points there while the group runs).
  const float* x = nullptr;                                        // the group's x [M, K]
  std::array<std::span<const int32_t>, kMaxLinearGroup> orders{};  // the distinct orders
  size_t num_orders = 0;
  std::array<int, kMaxLinearGroup> order_of{};                     // per output: index in orders, or -1
  std::array<float*, kMaxLinearGroup> gathered{};                  // per order: x gathered (set per run)
};
// Throws as kernels::plan_matmul() does. `team` only sets the tiling (its size).
LinearGroupPlan plan_linear_group(std::span<const float> x, int64_t M, std::span<const LinearOutput> outputs,
                                  const ThreadTeam* team, const kernels::MatmulOptions& options = {});
// The caller's buffers for a group's prepared inputs: x gathered in input orders, and x quantised
// or rounded for the kernels. Grown on demand, never shrunk (a forward keeps one in its workspace).
struct LinearScratch {
  std::vector<float> gathered;
  kernels::ActivationBuffer activations;
};

// Runs the plan on `team` (of the size it was planned for, or null when planned without one);
// gathers x in the outputs' input orders and quantises it where the kernels need it first (into
// `scratch`, which the plan's pointers then point into until the next run with that scratch).
// `kernel_scratch`: one per team thread (ThreadTeam's worker index; one without a team), lent to
// kernels that stage data (AMX); empty makes those kernels allocate their own per call.
void run_linear_group(LinearGroupPlan& plan, ThreadTeam* team, LinearScratch& scratch,
                      std::span<kernels::KernelScratch> kernel_scratch = {});
// run_linear_group() in two steps, for an x that `write_x(m0, m1)` writes first, rows [m0, m1) at a
// time, on the team (the residual add + RMSNorm before q/k/v and gate/up). Each range is converted
// for the kernels (bf16 or int8 activations, which hold x row by row) right after it is written, by
// the thread that wrote it, while it is still in cache (G20: norm + activation conversion fused).
// Then run_prepared_linear_group() runs the matmuls. The bits are those of write_x over all rows
// followed by run_linear_group(). write_x must write each row from inputs of that row only (ranges
// run concurrently), and no other group may use `scratch` in between (the prepared x lives there).
void write_linear_group_input(LinearGroupPlan& plan, ThreadTeam* team, LinearScratch& scratch, RangeFnRef write_x);
void run_prepared_linear_group(LinearGroupPlan& plan, ThreadTeam* team, std::span<kernels::KernelScratch> kernel_scratch = {});

// Row `row` of a [N, K] weight as f32: out has K elements.
void read_row(const TensorView& weight, int64_t row, std::span<float> out);

// A whole 1-D or small tensor as f32 (norm weights, biases, rope frequency divisors).
void read_all_f32(const TensorView& tensor, std::span<float> out);

}  // namespace lemma::layers
