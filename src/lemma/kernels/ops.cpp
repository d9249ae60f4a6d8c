// Dispatch of the row ops in ops.h: one table row per ISA.
#include "lemma/kernels/ops.h"

#include <cassert>

#include "lemma/kernels/reference/ops_reference.h"
#include "lemma/kernels/x86/simd/simd_kernels.h"

namespace lemma::kernels {

namespace {

struct RowOps {
  void (*rmsnorm)(const float*, const float*, float, float*, int64_t);
  void (*add_rmsnorm)(float*, const float*, const float*, float, float*, int64_t);
  void (*silu_mul)(const float*, const float*, float*, int64_t);
  void (*softmax)(const float*, float*, int64_t);
  void (*add)(const float*, const float*, float*, int64_t);
  void (*exp)(const float*, float*, int64_t);
};

// Indexed by Isa; AMX has no row-op instructions of its own and uses AVX-512.
constexpr RowOps kReference{rmsnorm_reference, add_rmsnorm_reference, silu_mul_reference, softmax_reference, add_reference, exp_reference};
namespace avx2 = x86::avx2;
namespace avx512 = x86::avx512;
constexpr RowOps kAvx2{avx2::rmsnorm, avx2::add_rmsnorm, avx2::silu_mul, avx2::softmax, avx2::add, avx2::exp_row};
constexpr RowOps kAvx512{avx512::rmsnorm, avx512::add_rmsnorm, avx512::silu_mul, avx512::softmax, avx512::add, avx512::exp_row};
constexpr RowOps kByIsa[] = {kReference, kAvx2, kAvx512, kAvx512};

const RowOps& ops_for(Isa isa) { return kByIsa[static_cast<int>(isa)]; }
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
  rmsnorm(x, weight, eps, y, active_isa());
}
void add_rmsnorm(std::span<float> residual, std::span<const float> delta, std::span<const float> weight, float eps,
                 std::span<float> y) {
  add_rmsnorm(residual, delta, weight, eps, y, active_isa());
}
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out) {
  silu_mul(gate, up, out, active_isa());
}
void softmax(std::span<const float> x, std::span<float> y) { softmax(x, y, active_isa()); }
void add(std::span<const float> a, std::span<const float> b, std::span<float> out) { add(a, b, out, active_isa()); }
void exp_row(std::span<const float> x, std::span<float> y) { exp_row(x, y, active_isa()); }

}  // namespace lemma::kernels
