// Row ops (see ops.h) over the vector layer, once per ISA: every loop runs Vec::kWidth lanes at a
// time with its last, partial vector read and written through Vec::load_first / store_first, and
// Vec::exp (each ISA's own: AVX2 flushes results below FLT_MIN to 0, AVX-512 keeps subnormals).
#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {

using F = Vec::F;
using D = Vec::D;
constexpr int64_t W = Vec::kWidth;

// y = (x * r) * weight, r from the sum of squares accumulated in (lo, hi). Squares are formed in
// float (the reference squares in double): a relative difference of at most 2^-24 per term.
void rms_scale(const float* x, D lo, D hi, const float* weight, float eps, float* y, int64_t n) {
  const double mean = n == 0 ? 0.0 : Vec::reduce_double(lo, hi) / static_cast<double>(n);
  const F r = Vec::set1(static_cast<float>(1.0 / __builtin_sqrt(mean + static_cast<double>(eps))));
  for (int64_t i = 0; i < n; i += W) {
    Vec::store_first(y + i, Vec::mul(Vec::mul(Vec::load_first(x + i, n - i), r), Vec::load_first(weight + i, n - i)), n - i);
  }
}

}  // namespace

void simd::exp_row(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += W) Vec::store_first(y + i, Vec::exp(Vec::load_first(x + i, n - i)), n - i);
}

void simd::add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += W) Vec::store_first(out + i, Vec::add(Vec::load_first(a + i, n - i), Vec::load_first(b + i, n - i)), n - i);
}

void simd::silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const F one = Vec::set1(1.0f);
  for (int64_t i = 0; i < n; i += W) {
    const F g = Vec::load_first(gate + i, n - i);
    const F silu = Vec::div(g, Vec::add(one, Vec::exp(Vec::sub(Vec::zero(), g))));
    Vec::store_first(out + i, Vec::mul(silu, Vec::load_first(up + i, n - i)), n - i);
  }
}

void simd::rmsnorm(const float* x, const float* weight, float eps, float* y, int64_t n) {
  D lo = Vec::zero_double(), hi = Vec::zero_double();
  for (int64_t i = 0; i < n; i += W) {
    const F v = Vec::load_first(x + i, n - i);  // zero padding adds nothing
    Vec::accumulate_double(Vec::mul(v, v), lo, hi);
  }
  rms_scale(x, lo, hi, weight, eps, y, n);
}

// add then rmsnorm in two passes instead of three: the sums are stored and squared in the same lanes
// and order (zero padding in the tail), so the bits are theirs.
void simd::add_rmsnorm(float* residual, const float* delta, const float* weight, float eps, float* y, int64_t n) {
  D lo = Vec::zero_double(), hi = Vec::zero_double();
  for (int64_t i = 0; i < n; i += W) {
    const F v = Vec::add(Vec::load_first(residual + i, n - i), Vec::load_first(delta + i, n - i));
    Vec::store_first(residual + i, v, n - i);
    Vec::accumulate_double(Vec::mul(v, v), lo, hi);
  }
  rms_scale(residual, lo, hi, weight, eps, y, n);
}

void simd::softmax(const float* x, float* y, int64_t n) {
  const float neg_inf = -__builtin_inff();
  F max = Vec::set1(neg_inf);
  Vec::Mask nan = Vec::no_lanes();
  for (int64_t i = 0; i < n; i += W) {
    const F v = Vec::load_first(x + i, n - i, neg_inf);
    nan = Vec::mask_or(nan, Vec::is_nan(v));
    max = Vec::max(max, v);
  }
  const float row_max = Vec::reduce_max_in_order(max);
  const bool has_nan = Vec::any(nan);
  if (has_nan || row_max == neg_inf) {
    const F fill = has_nan ? Vec::set1(__builtin_nanf("")) : Vec::zero();
    for (int64_t i = 0; i < n; i += W) Vec::store_first(y + i, fill, n - i);
    return;
  }
  const F shift = Vec::set1(row_max);
  D lo = Vec::zero_double(), hi = Vec::zero_double();
  for (int64_t i = 0; i < n; i += W) {
    const F e = Vec::exp(Vec::sub(Vec::load_first(x + i, n - i, neg_inf), shift));  // padding: exp(-inf) = 0
    Vec::store_first(y + i, e, n - i);
    Vec::accumulate_double(e, lo, hi);
  }
  const F inv = Vec::set1(static_cast<float>(1.0 / Vec::reduce_double(lo, hi)));
  for (int64_t i = 0; i < n; i += W) Vec::store_first(y + i, Vec::mul(Vec::load_first(y + i, n - i), inv), n - i);
}

}  // namespace lemma::kernels::x86
