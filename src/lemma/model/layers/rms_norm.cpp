#include "lemma/model/layers/rms_norm.h"

#include "lemma/kernels/ops.h"

namespace lemma::layers {

void rms_norm(std::span<const float> x, int64_t rows, int64_t dim, std::span<const float> weight, float eps,
              std::span<float> y, kernels::Isa isa) {
  const auto n = static_cast<size_t>(dim);
  for (int64_t r = 0; r < rows; ++r)
    kernels::rmsnorm(x.subspan(static_cast<size_t>(r) * n, n), weight.first(n), eps,
                     y.subspan(static_cast<size_t>(r) * n, n), isa);
}

void add_rms_norm(std::span<float> residual, std::span<const float> delta, int64_t rows, int64_t dim,
                  std::span<const float> weight, float eps, std::span<float> y, kernels::Isa isa) {
  const auto n = static_cast<size_t>(dim);
  for (int64_t r = 0; r < rows; ++r) {
    const size_t at = static_cast<size_t>(r) * n;
    kernels::add_rmsnorm(residual.subspan(at, n), delta.subspan(at, n), weight.first(n), eps, y.subspan(at, n), isa);
  }
}

}  // namespace lemma::layers
