// The vocabulary passes of vocab_ops.h over the vector layer, once per ISA: Vec::kWidth lanes at a
// time, the last partial vector through Vec::load_first / store_first (padding -inf where it could
// win a max or pass a threshold), exp weights summed in f64 in the 16-lane order vocab_ops.h fixes.
#include "lemma/kernels/exp_sum_block.h"
#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {
using F = Vec::F;
using D = Vec::D;
constexpr int64_t W = Vec::kWidth;
constexpr float kNegInf = -__builtin_inff();
}  // namespace

int64_t simd::copy_masking_nan(const float* x, float* y, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += W) {
    const F v = Vec::load_first(x + i, n - i);
    const Vec::Mask nan = Vec::is_nan(v);
    count += __builtin_popcount(Vec::bits(nan) & Vec::first_lanes(n - i));
    Vec::store_first(y + i, Vec::select(nan, Vec::set1(kNegInf), v), n - i);
  }
  return count;
}

float simd::max_ignoring_nan(const float* x, int64_t n) {
  // vmaxps returns its second operand when either is NaN: the running max survives a NaN.
  F a = Vec::set1(kNegInf), b = a;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a = Vec::max(Vec::load(x + i), a);
    b = Vec::max(Vec::load(x + i + W), b);
  }
  for (; i < n; i += W) a = Vec::max(Vec::load_first(x + i, n - i, kNegInf), a);
  return Vec::reduce_max_in_order(Vec::max(a, b));
}

int64_t simd::argmax_first(const float* x, int64_t n) {
  const float max = max_ignoring_nan(x, n);
  if (max == kNegInf) return -1;
  const F target = Vec::set1(max);
  for (int64_t i = 0; i < n; i += W) {
    const unsigned hit = Vec::bits(Vec::eq(Vec::load_first(x + i, n - i, kNegInf), target)) & Vec::first_lanes(n - i);
    if (hit != 0) return i + __builtin_ctz(hit);
  }
  return -1;  // not reached: max is one of the entries
}

void simd::divide_row(const float* x, float divisor, float* y, int64_t n) {
  const F d = Vec::set1(divisor);
  for (int64_t i = 0; i < n; i += W) Vec::store_first(y + i, Vec::div(Vec::load_first(x + i, n - i), d), n - i);
}

// Lane o % 16 of each block sums in f64: steps of 16 entries, 16 / W vectors each, whose lane halves
// add into their own accumulators; then lanes l and l + 8 pair and the 8 pairs add in order.
double simd::exp_block_sums(const float* x, float shift, float* w, double* block_sums, int64_t n) {
  constexpr int kVectors = 16 / W;
  const F s = Vec::set1(shift);
  double total = 0.0;
  for (int64_t begin = 0; begin < n; begin += kExpSumBlock) {
    const int64_t end = begin + kExpSumBlock < n ? begin + kExpSumBlock : n;
    D sums[2 * kVectors];  // lanes [kDoubles j, kDoubles (j + 1)) of the 16
    for (D& d : sums) d = Vec::zero_double();
    for (int64_t i = begin; i < end; i += 16) {
      for (int j = 0; j < kVectors; ++j) {
        const int64_t at = i + W * j;
        // Padding entries are -inf, whose weight is 0: adding it leaves a lane unchanged.
        const F v = at < end ? Vec::load_first(x + at, end - at, kNegInf) : Vec::set1(kNegInf);
        const F e = Vec::exp(Vec::sub(v, s));
        if (at < end) Vec::store_first(w + at, e, end - at);
        Vec::accumulate_double(e, sums[2 * j], sums[2 * j + 1]);
      }
    }
    alignas(64) double lanes[8];
    for (int j = 0; j < 8 / Vec::kDoubles; ++j) Vec::store_double(lanes + Vec::kDoubles * j, Vec::add_double(sums[j], sums[j + 8 / Vec::kDoubles]));
    double sum = 0.0;
    for (double v : lanes) sum += v;
    block_sums[begin / kExpSumBlock] = sum;
    total += sum;
  }
  return total;
}

int64_t simd::first_above(const float* x, float threshold, int64_t n) {
  const F t = Vec::set1(threshold);
  for (int64_t i = 0; i < n; i += W) {
    const unsigned above = Vec::bits(Vec::gt(Vec::load_first(x + i, n - i, kNegInf), t)) & Vec::first_lanes(n - i);
    if (above != 0) return i + __builtin_ctz(above);
  }
  return n;
}

int64_t simd::select_at_least(const float* x, float threshold, int32_t* ids, int64_t n) {
  const F t = Vec::set1(threshold), neg_inf = Vec::set1(kNegInf);
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += W) {
    const F v = Vec::load_first(x + i, n - i, kNegInf);
    const unsigned keep = Vec::bits(Vec::mask_and(Vec::ge(v, t), Vec::gt(v, neg_inf)));
    count += Vec::store_lane_indices(ids + count, keep, static_cast<int32_t>(i));
  }
  return count;
}

}  // namespace lemma::kernels::x86
