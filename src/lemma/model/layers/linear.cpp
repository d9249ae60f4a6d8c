#include "lemma/model/layers/linear.h"

#include <algorithm>
#include <cassert>

#include "lemma/base/error.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/matmul.h"

namespace lemma::layers {

namespace {
int64_t row_length(const TensorView& w) { return w.shape.rank == 1 ? w.shape[0] : w.shape[w.shape.rank - 1]; }
}  // namespace

bool is_supported_weight_dtype(DType dtype) { return kernels::can_dequantize(dtype); }

void read_row(const TensorView& weight, int64_t row, std::span<float> out) {
  const int64_t k = row_length(weight);
  assert(static_cast<int64_t>(out.size()) >= k);
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

void linear(std::span<const float> x, int64_t M, const TensorView& weight, std::span<const float> bias,
            std::span<float> y, ThreadTeam* team) {
  const int64_t N = weight.shape[0];
  const int64_t K = weight.shape[1];
  assert(static_cast<int64_t>(x.size()) >= M * K && static_cast<int64_t>(y.size()) >= M * N);
  const uint64_t row_bytes = *dtype_bytes(weight.dtype, static_cast<uint64_t>(K));
  auto rows = [&](int64_t n0, int64_t n1) {
    TensorView part = weight;
    part.data = weight.bytes_ptr() + static_cast<uint64_t>(n0) * row_bytes;
    part.shape = Shape{n1 - n0, K};
    kernels::matmul(x.data(), K, M, part, y.data() + n0, N, bias.empty() ? nullptr : bias.data() + n0);
  };
  // Chunks of at least 16 rows and ~64K multiply-adds keep small matmuls on one thread.
  const int64_t min_rows = std::max<int64_t>(16, (int64_t{1} << 16) / std::max<int64_t>(M * K, 1));
  if (team) {
    team->parallel_for(N, min_rows, rows);
  } else {
    rows(0, N);
  }
}

}  // namespace lemma::layers
