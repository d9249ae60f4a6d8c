#include "lemma/kernels/matmul.h"

#include <cstddef>
#include <cstdint>
#include <memory>

#include "lemma/base/error.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/kernel_policy.h"

namespace lemma::kernels {

MatmulPlan plan_matmul(const float* x, int64_t x_stride, int64_t M, const TensorView& w, float* y,
                       int64_t y_stride, const float* bias, const MatmulOptions& options) {
  if (w.shape.rank != 2) fail<InvalidArgument>("matmul: W must be [N, K], got {}", w.shape.to_string());
  const int64_t N = w.shape[0];
  const int64_t K = w.shape[1];
  if (M < 0 || N < 0 || K < 0) fail<InvalidArgument>("matmul: negative size M={} W={}", M, w.shape.to_string());
  if (x_stride < K || y_stride < N) {
    fail<InvalidArgument>("matmul: x_stride {} < K {} or y_stride {} < N {}", x_stride, K, y_stride, N);
  }
  const Isa isa = options.isa.value_or(detected_isa());
  if (isa > detected_isa()) {
    fail<InvalidArgument>("matmul: ISA {} is not available (max {})", isa_name(isa), isa_name(detected_isa()));
  }
  const MatrixFormat format = format_of(w);
  const MatmulPrecision precision = options.precision.value_or(default_matmul_precision(format, isa, options.activations));
  const MatmulKernel* kernel = find_matmul_kernel(format, K, isa, precision, M);
  if (kernel == nullptr) {
    fail<Unsupported>("matmul: no kernel for {} weights with K={} (block size {})", format_name(format), K,
                      format_block_values(format));
  }
  MatmulPlan plan;
  if (M == 0 || N == 0) return plan;
  if (K > 0 && (x == nullptr || w.data == nullptr)) fail<InvalidArgument>("matmul: null x or W");
  if (y == nullptr) fail<InvalidArgument>("matmul: null y");
  plan.fn = kernel->fn;
  plan.quantize_x = kernel->quantize_x;
  plan.xq_bytes = kernel->quantize_x != nullptr ? kernel->xq_bytes(M, K) : 0;
  plan.xq_row_bytes = kernel->quantize_x != nullptr ? kernel->xq_bytes(1, K) : 0;
  plan.row_group = format.interleaved() ? kInterleaveRows : 1;
  MatmulArgs& args = plan.args;
  args.x = x;
  args.x_stride = x_stride;
  args.w = w.data;
  args.w_row_bytes = static_cast<int64_t>(dtype_bytes(w.dtype, static_cast<uint64_t>(K)).value_or(0));
  args.bias = bias;
  args.y = y;
  args.y_stride = y_stride;
  args.M = M;
  args.N = N;
  args.K = K;
  return plan;
}

namespace {

bool same_activations(const MatmulPlan& a, const MatmulPlan& b) {
  return a.quantize_x == b.quantize_x && a.args.x == b.args.x && a.args.x_stride == b.args.x_stride &&
         a.args.M == b.args.M && a.args.K == b.args.K;
}

}  // namespace

namespace {

bool needs_activations(const MatmulPlan& p) { return p.fn != nullptr && p.quantize_x != nullptr; }

// Points each plan that needs prepared x at its buffer (shared by plans over the same x); true for
// the plans that own theirs (must fill it).
template <class Fill>
void assign_activation_buffers(std::span<MatmulPlan> plans, ActivationBuffer& buffer, Fill&& fill) {
  size_t total = 0;
  for (const MatmulPlan& p : plans) {
    if (needs_activations(p)) total += p.xq_bytes;
  }
  if (total == 0) return;
  std::byte* next = buffer.reserve(total);
  for (size_t i = 0; i < plans.size(); ++i) {
    MatmulPlan& p = plans[i];
    if (!needs_activations(p)) continue;
    p.args.xq = nullptr;
    for (size_t j = 0; j < i && p.args.xq == nullptr; ++j) {
      if (plans[j].args.xq != nullptr && same_activations(plans[j], p)) p.args.xq = plans[j].args.xq;
    }
    if (p.args.xq != nullptr) continue;
    p.args.xq = next;
    next += p.xq_bytes;
    fill(p);
  }
}

// Whether plans[i] fills its own buffer (no earlier plan shares it).
bool owns_activations(std::span<const MatmulPlan> plans, size_t i) {
  if (!needs_activations(plans[i])) return false;
  for (size_t j = 0; j < i; ++j) {
    if (plans[j].args.xq == plans[i].args.xq) return false;
  }
  return true;
}

}  // namespace

void prepare_activations(std::span<MatmulPlan> plans, ActivationBuffer& buffer) {
  assign_activation_buffers(plans, buffer, [](MatmulPlan& p) {
    p.quantize_x(p.args.x, p.args.x_stride, p.args.M, p.args.K, const_cast<void*>(p.args.xq));
  });
}

bool reserve_activations(std::span<MatmulPlan> plans, ActivationBuffer& buffer) {
  bool any = false;
  for (const MatmulPlan& p : plans) any = any || needs_activations(p);
  if (!any) return false;
  assign_activation_buffers(plans, buffer, [](MatmulPlan&) {});
  return true;
}

void prepare_activation_rows(std::span<const MatmulPlan> plans, int64_t m0, int64_t m1) {
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!owns_activations(plans, i) || m0 >= m1) continue;
    const MatmulPlan& p = plans[i];
    void* rows = static_cast<std::byte*>(const_cast<void*>(p.args.xq)) + static_cast<size_t>(m0) * p.xq_row_bytes;
    p.quantize_x(p.args.x + m0 * p.args.x_stride, p.args.x_stride, m1 - m0, p.args.K, rows);
  }
}

void MatmulPlan::run_rows(int64_t n0, int64_t n1, KernelScratch* scratch) const {
  if (fn == nullptr || n0 >= n1) return;
  if (quantize_x != nullptr && args.xq == nullptr) fail<InvalidArgument>("matmul: run_rows() before prepare_activations()");
  if (n0 % row_group != 0) fail<InvalidArgument>("matmul: rows of interleaved weights start in groups of {}, not at {}", row_group, n0);
  MatmulArgs part = args;
  part.w = static_cast<const char*>(args.w) + n0 * args.w_row_bytes;
  part.bias = args.bias != nullptr ? args.bias + n0 : nullptr;
  part.y = args.y + n0;
  part.N = n1 - n0;
  part.scratch = scratch;
  fn(part);
}

void matmul(const float* x, int64_t x_stride, int64_t M, const TensorView& w, float* y,
            int64_t y_stride, const float* bias, const MatmulOptions& options) {
  MatmulPlan plan = plan_matmul(x, x_stride, M, w, y, y_stride, bias, options);
  ActivationBuffer buffer;  // one call: its own (callers that repeat plan and keep a buffer)
  prepare_activations(std::span(&plan, 1), buffer);
  plan.run_rows(0, plan.args.N);
}

}  // namespace lemma::kernels
