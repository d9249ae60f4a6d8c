// The row ops in ops.h, through the kernel set of the ISA (kernel_set.h).
#include "lemma/kernels/ops.h"

#include <cassert>

#include "lemma/kernels/kernel_set.h"

namespace lemma::kernels {

namespace {

const RowOps& ops_for(Isa isa) { return kernel_set(isa).row_ops(); }
int64_t size(std::span<const float> s) { return static_cast<int64_t>(s.size()); }

}  // namespace

void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y, Isa isa) {
  assert(x.size() == weight.size() && x.size() == y.size());
  ops_for(isa).rmsnorm(x.data(), weight.data(), eps, y.data(), size(x));
}

void add_rmsnorm(std::span<float> residual, std::span<const float> delta, std::span<const float> weight, float eps,
                 std::span<float> y, Isa isa) {
  assert(residual.size() == delta.size() && residual.size() == weight.size() && residual.size() == y.size());
  ops_for(isa).add_rmsnorm(residual.data(), delta.data(), weight.data(), eps, y.data(), size(residual));
}

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out, Isa isa) {
  assert(gate.size() == up.size() && gate.size() == out.size());
  ops_for(isa).silu_mul(gate.data(), up.data(), out.data(), size(gate));
}

void softmax(std::span<const float> x, std::span<float> y, Isa isa) {
  assert(x.size() == y.size());
  ops_for(isa).softmax(x.data(), y.data(), size(x));
}

void add(std::span<const float> a, std::span<const float> b, std::span<float> out, Isa isa) {
  assert(a.size() == b.size() && a.size() == out.size());
  ops_for(isa).add(a.data(), b.data(), out.data(), size(a));
}

void exp_row(std::span<const float> x, std::span<float> y, Isa isa) {
  assert(x.size() == y.size());
  ops_for(isa).exp(x.data(), y.data(), size(x));
}

void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y) {
  rmsnorm(x, weight, eps, y, detected_isa());
}
void add_rmsnorm(std::span<float> residual, std::span<const float> delta, std::span<const float> weight, float eps,
                 std::span<float> y) {
  add_rmsnorm(residual, delta, weight, eps, y, detected_isa());
}
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out) {
  silu_mul(gate, up, out, detected_isa());
}
void softmax(std::span<const float> x, std::span<float> y) { softmax(x, y, detected_isa()); }
void add(std::span<const float> a, std::span<const float> b, std::span<float> out) { add(a, b, out, detected_isa()); }
void exp_row(std::span<const float> x, std::span<float> y) { exp_row(x, y, detected_isa()); }

}  // namespace lemma::kernels
