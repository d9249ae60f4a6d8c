// The vocabulary passes in vocab_ops.h, through the kernel set of the ISA (kernel_set.h).
#include "lemma/kernels/vocab_ops.h"

#include <cassert>

#include "lemma/kernels/kernel_set.h"

namespace lemma::kernels {

namespace {

const VocabOps& ops_for(Isa isa) { return kernel_set(isa).vocab_ops(); }
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

int64_t copy_masking_nan(std::span<const float> x, std::span<float> y) { return copy_masking_nan(x, y, detected_isa()); }
float max_ignoring_nan(std::span<const float> x) { return max_ignoring_nan(x, detected_isa()); }
int64_t argmax_first(std::span<const float> x) { return argmax_first(x, detected_isa()); }
void divide_row(std::span<const float> x, float divisor, std::span<float> y) {
  divide_row(x, divisor, y, detected_isa());
}
double exp_block_sums(std::span<const float> x, float shift, std::span<float> w, std::span<double> block_sums) {
  return exp_block_sums(x, shift, w, block_sums, detected_isa());
}
int64_t first_above(std::span<const float> x, float threshold) { return first_above(x, threshold, detected_isa()); }
int64_t select_at_least(std::span<const float> x, float threshold, std::span<int32_t> ids) {
  return select_at_least(x, threshold, ids, detected_isa());
}

}  // namespace lemma::kernels
