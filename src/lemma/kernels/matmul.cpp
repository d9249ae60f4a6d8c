#include "lemma/kernels/matmul.h"

#include "lemma/base/error.h"

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
  const Isa isa = options.isa.value_or(active_isa());
  if (isa > detected_isa()) {
    fail<InvalidArgument>("matmul: ISA {} is not available (max {})", isa_name(isa), isa_name(detected_isa()));
  }
  const MatmulKernel* kernel = find_matmul_kernel(w.dtype, K, isa, options.precision);
  if (kernel == nullptr) {
    fail<Unsupported>("matmul: no kernel for {} weights with K={} (block size {})", dtype_name(w.dtype), K,
                      dtype_info(w.dtype).block_elements);
  }
  MatmulPlan plan;
  if (M == 0 || N == 0) return plan;
  if (K > 0 && (x == nullptr || w.data == nullptr)) fail<InvalidArgument>("matmul: null x or W");
  if (y == nullptr) fail<InvalidArgument>("matmul: null y");
  plan.fn = kernel->fn;
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

void MatmulPlan::run_rows(int64_t n0, int64_t n1) const {
  if (fn == nullptr || n0 >= n1) return;
  MatmulArgs part = args;
  part.w = static_cast<const char*>(args.w) + n0 * args.w_row_bytes;
  part.bias = args.bias != nullptr ? args.bias + n0 : nullptr;
  part.y = args.y + n0;
  part.N = n1 - n0;
  fn(part);
}

void matmul(const float* x, int64_t x_stride, int64_t M, const TensorView& w, float* y,
            int64_t y_stride, const float* bias, const MatmulOptions& options) {
  const MatmulPlan plan = plan_matmul(x, x_stride, M, w, y, y_stride, bias, options);
  plan.run_rows(0, plan.args.N);
}

}  // namespace lemma::kernels
