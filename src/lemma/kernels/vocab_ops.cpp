// Dispatch of the vocabulary passes in vocab_ops.h: one table row per ISA.
#include "lemma/kernels/vocab_ops.h"

#include <cassert>

#include "lemma/kernels/reference/vocab_ops_reference.h"
#include "lemma/kernels/x86/simd/simd_kernels.h"

namespace lemma::kernels {

namespace {

struct VocabOps {
  int64_t (*copy_masking_nan)(const float*, float*, int64_t);
  float (*max_ignoring_nan)(const float*, int64_t);
  int64_t (*argmax_first)(const float*, int64_t);
  void (*divide_row)(const float*, float, float*, int64_t);
  double (*exp_block_sums)(const float*, float, float*, double*, int64_t);
  int64_t (*select_at_least)(const float*, float, int32_t*, int64_t);
  int64_t (*first_above)(const float*, float, int64_t);
};

// Indexed by Isa; AMX machines use the AVX-512 row.
constexpr VocabOps kReference{copy_masking_nan_reference, max_ignoring_nan_reference, argmax_first_reference,
                              divide_row_reference,       exp_block_sums_reference,   select_at_least_reference, first_above_reference};
namespace avx2 = x86::avx2;
namespace avx512 = x86::avx512;
constexpr VocabOps kAvx2{avx2::copy_masking_nan, avx2::max_ignoring_nan, avx2::argmax_first, avx2::divide_row,
                         avx2::exp_block_sums,   avx2::select_at_least,  avx2::first_above};
constexpr VocabOps kAvx512{avx512::copy_masking_nan, avx512::max_ignoring_nan, avx512::argmax_first, avx512::divide_row,
                           avx512::exp_block_sums,   avx512::select_at_least,  avx512::first_above};
constexpr VocabOps kByIsa[] = {kReference, kAvx2, kAvx512, kAvx512};

const VocabOps& ops_for(Isa isa) { return kByIsa[static_cast<int>(isa)]; }
int64_t size(std::span<const float> s) { return static_cast<int64_t>(s.size()); }

}  // namespace

int64_t copy_masking_nan(std::span<const float> x, std::span<float> y, Isa isa) {
  assert(y.size() >= x.size());
  return ops_for(isa).copy_masking_nan(x.data(), y.data(), size(x));
}

float max_ignoring_nan(std::span<const float> x, Isa isa) { return ops_for(isa).max_ignoring_nan(x.data(), size(x)); }

int64_t argmax_first(std::span<const float> x, Isa isa) { return ops_for(isa).argmax_first(x.data(), size(x)); }

void divide_row(std::span<const float> x, float divisor, std::span<float> y, Isa isa) {
  assert(y.size() >= x.size());
  ops_for(isa).divide_row(x.data(), divisor, y.data(), size(x));
}

double exp_block_sums(std::span<const float> x, float shift, std::span<float> w, std::span<double> block_sums,
                      Isa isa) {
  assert(w.size() >= x.size() && static_cast<int64_t>(block_sums.size()) >= exp_sum_blocks(size(x)));
  return ops_for(isa).exp_block_sums(x.data(), shift, w.data(), block_sums.data(), size(x));
}

int64_t select_at_least(std::span<const float> x, float threshold, std::span<int32_t> ids, Isa isa) {
  assert(ids.size() >= x.size());
  return ops_for(isa).select_at_least(x.data(), threshold, ids.data(), size(x));
}

int64_t first_above(std::span<const float> x, float threshold, Isa isa) {
  return ops_for(isa).first_above(x.data(), threshold, size(x));
}

int64_t copy_masking_nan(std::span<const float> x, std::span<float> y) { return copy_masking_nan(x, y, active_isa()); }
float max_ignoring_nan(std::span<const float> x) { return max_ignoring_nan(x, active_isa()); }
int64_t argmax_first(std::span<const float> x) { return argmax_first(x, active_isa()); }
void divide_row(std::span<const float> x, float divisor, std::span<float> y) {
  divide_row(x, divisor, y, active_isa());
}
double exp_block_sums(std::span<const float> x, float shift, std::span<float> w, std::span<double> block_sums) {
  return exp_block_sums(x, shift, w, block_sums, active_isa());
}
int64_t first_above(std::span<const float> x, float threshold) { return first_above(x, threshold, active_isa()); }
int64_t select_at_least(std::span<const float> x, float threshold, std::span<int32_t> ids) {
  return select_at_least(x, threshold, ids, active_isa());
}

}  // namespace lemma::kernels
