#include "lemma/model/layers/linear.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/interleaved_blocks.h"

namespace lemma::layers {

namespace {

int64_t row_length(const TensorView& w) { return w.shape.rank == 1 ? w.shape[0] : w.shape[w.shape.rank - 1]; }

// The index of `order` among the plan's distinct input orders (added when new). q/k/v (and
// gate/up) of a GPTQ checkpoint share one order: their Hessians come from the same input.
int add_order(LinearGroupPlan& g, std::span<const int32_t> order, int64_t K) {
  if (static_cast<int64_t>(order.size()) != K)
    fail<InvalidArgument>("linear: an input order of {} entries for {} inputs", order.size(), K);
  for (size_t d = 0; d < g.num_orders; ++d) {
    const auto& known = g.orders[d];
    if (known.data() == order.data() || std::equal(known.begin(), known.end(), order.begin(), order.end()))
      return static_cast<int>(d);
  }
  g.orders[g.num_orders] = order;
  return static_cast<int>(g.num_orders++);
}

// Points the plans with an input order at their gathered x (one [M, K] buffer per distinct order,
// in `scratch`, grown only); false when the group has none.
bool bind_ordered_inputs(LinearGroupPlan& g, std::vector<float>& scratch) {
  if (g.num_orders == 0) return false;
  const int64_t M = g.plans[0].args.M, K = g.plans[0].args.K;
  const auto size = static_cast<size_t>(M * K) * g.num_orders;
  if (scratch.size() < size) scratch.resize(size);
  for (size_t d = 0; d < g.num_orders; ++d) g.gathered[d] = scratch.data() + d * static_cast<size_t>(M * K);
  for (size_t i = 0; i < g.count; ++i) {
    if (g.order_of[i] < 0) continue;
    g.plans[i].args.x = g.gathered[static_cast<size_t>(g.order_of[i])];
    g.plans[i].args.x_stride = K;
  }
  return true;
}

// Rows [m0, m1) of x gathered into each distinct order's buffer: row[j] = x[m, order[j]].
void gather_ordered_inputs(const LinearGroupPlan& g, int64_t m0, int64_t m1) {
  const int64_t K = g.plans[0].args.K;
  for (size_t d = 0; d < g.num_orders; ++d) {
    const int32_t* order = g.orders[d].data();
    for (int64_t m = m0; m < m1; ++m) {
      const float* src = g.x + m * K;
      float* dst = g.gathered[d] + m * K;
      for (int64_t j = 0; j < K; ++j) dst[j] = src[order[j]];
    }
  }
}

}  // namespace

bool is_supported_weight_dtype(DType dtype) { return kernels::can_dequantize(dtype); }

void read_row(const TensorView& weight, int64_t row, std::span<float> out) {
  const int64_t k = row_length(weight);
  assert(static_cast<int64_t>(out.size()) >= k);
  if (weight.layout == RowLayout::kInterleaved16) {  // a tied LM head's embedding rows (interleaved_weights.h)
    kernels::read_interleaved_row(weight.dtype, weight.data, k, row, out.data());
    return;
  }
  const auto row_bytes = dtype_bytes(weight.dtype, static_cast<uint64_t>(k));
  if (!row_bytes || !kernels::can_dequantize(weight.dtype))
    fail<Unsupported>("cannot read rows of {} weights with {} values per row", dtype_name(weight.dtype), k);
  kernels::dequantize_row(weight.dtype, weight.bytes_ptr() + static_cast<uint64_t>(row) * *row_bytes, out.data(), k);
}

void read_all_f32(const TensorView& tensor, std::span<float> out) {
  const int64_t k = row_length(tensor);
  const int64_t rows = k == 0 ? 0 : tensor.elements() / k;
  for (int64_t r = 0; r < rows; ++r) read_row(tensor, r, out.subspan(static_cast<size_t>(r * k)));
}

LinearGroupPlan plan_linear_group(std::span<const float> x, int64_t M, std::span<const LinearOutput> outputs,
                                  const ThreadTeam* team, const kernels::MatmulOptions& options) {
  assert(outputs.size() <= kMaxLinearGroup);
  // Validated and resolved once per matrix; tiles then only pick row ranges of W (the matmul is
  // invariant to that split, so neither the thread count nor which thread runs a tile changes any
  // output).
  LinearGroupPlan g;
  g.count = outputs.size();
  g.x = x.data();
  int64_t K = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const LinearOutput& o = outputs[i];
    const int64_t N = o.weight->shape[0];
    K = o.weight->shape[1];
    assert(static_cast<int64_t>(x.size()) >= M * K && static_cast<int64_t>(o.y.size()) >= M * N);
    g.plans[i] = kernels::plan_matmul(x.data(), K, M, *o.weight, o.y.data(), N, o.bias.empty() ? nullptr : o.bias.data(),
                                     options);
    g.row_offset[i + 1] = g.row_offset[i] + (N + 15) / 16 * 16;
    g.order_of[i] = o.input_order.empty() ? -1 : add_order(g, o.input_order, K);
  }
  if (team == nullptr || team->size() == 1) return g;
  // At least ~64K multiply-adds per tile, so small matmuls stay on few threads.
  const int64_t min_rows = (std::max<int64_t>(16, (int64_t{1} << 16) / std::max<int64_t>(M * K, 1)) + 15) / 16 * 16;
  g.tiles = guided_row_tiles(g.row_offset[g.count], team->size(), min_rows, 16);
  return g;
}

// Row tiles over the team: each thread runs the part of each matrix inside a tile, with its own
// kernel scratch.
void run_prepared_linear_group(LinearGroupPlan& g, ThreadTeam* team, std::span<kernels::KernelScratch> kernel_scratch) {
  const auto scratch_of = [kernel_scratch](int worker) {
    return kernel_scratch.empty() ? nullptr : &kernel_scratch[static_cast<size_t>(worker)];
  };
  if (g.tiles.count == 0) {
    for (size_t i = 0; i < g.count; ++i) g.plans[i].run_rows(0, g.plans[i].args.N, scratch_of(0));
    return;
  }
  assert(team != nullptr && (kernel_scratch.empty() || kernel_scratch.size() >= static_cast<size_t>(team->size())));
  team->parallel_tiles(g.tiles.count, 1, [&g, &scratch_of](int64_t t0, int64_t t1, int worker) {
    const int64_t begin = g.tiles.start[static_cast<size_t>(t0)], end = g.tiles.start[static_cast<size_t>(t1)];
    for (size_t i = 0; i < g.count; ++i) {  // the part of each matrix inside [begin, end)
      const int64_t n0 = std::max(begin, g.row_offset[i]) - g.row_offset[i];
      const int64_t n1 = std::min(end - g.row_offset[i], g.plans[i].args.N);
      if (n0 < n1) g.plans[i].run_rows(n0, n1, scratch_of(worker));
    }
  });
}

void run_linear_group(LinearGroupPlan& g, ThreadTeam* team, LinearScratch& scratch,
                      std::span<kernels::KernelScratch> kernel_scratch) {
  // int8/bf16 kernels read x prepared once per call; bf16 rows are prepared on the team (at batch 32
  // the 4864-wide input of down took 8% of that matmul on one thread). Ordered inputs are gathered
  // first, row by row, by the thread that then prepares the row.
  const auto plans = std::span(g.plans.data(), g.count);
  const bool ordered = bind_ordered_inputs(g, scratch.gathered);
  if (g.tiles.count != 0) {
    const bool needs_x = kernels::reserve_activations(plans, scratch.activations);
    if (needs_x || ordered) {
      parallel_rows(team, g.plans[0].args.M, g.plans[0].args.K, [&](int64_t m0, int64_t m1) {
        if (ordered) gather_ordered_inputs(g, m0, m1);
        if (needs_x) kernels::prepare_activation_rows(plans, m0, m1);
      });
    }
  } else {
    if (ordered) gather_ordered_inputs(g, 0, g.plans[0].args.M);
    kernels::prepare_activations(plans, scratch.activations);
  }
  run_prepared_linear_group(g, team, kernel_scratch);
}

void write_linear_group_input(LinearGroupPlan& g, ThreadTeam* team, LinearScratch& scratch, RangeFnRef write_x) {
  const auto plans = std::span(g.plans.data(), g.count);
  const int64_t M = g.count != 0 ? g.plans[0].args.M : 0, K = g.count != 0 ? g.plans[0].args.K : 0;
  const bool ordered = bind_ordered_inputs(g, scratch.gathered);
  const bool needs_x = kernels::reserve_activations(plans, scratch.activations);
  // Each range in pieces of about 16K values, so the rows written are still in L1 when converted.
  const int64_t piece = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(K, 1));
  parallel_rows(team, M, K, [&](int64_t m0, int64_t m1) {
    for (int64_t p0 = m0; p0 < m1; p0 += piece) {
      const int64_t p1 = std::min(m1, p0 + piece);
      write_x(p0, p1);
      if (ordered) gather_ordered_inputs(g, p0, p1);
      if (needs_x) kernels::prepare_activation_rows(plans, p0, p1);
    }
  });
}

void linear_group(std::span<const float> x, int64_t M, std::span<const LinearOutput> outputs, ThreadTeam* team) {
  LinearGroupPlan plan = plan_linear_group(x, M, outputs, team);
  LinearScratch scratch;  // one call: its own (a forward keeps one in its workspace)
  run_linear_group(plan, team, scratch);
}

void linear(std::span<const float> x, int64_t M, const TensorView& weight, std::span<const float> bias,
            std::span<float> y, ThreadTeam* team) {
  const LinearOutput output{&weight, bias, y, {}};
  linear_group(x, M, std::span(&output, 1), team);
}

}  // namespace lemma::layers
