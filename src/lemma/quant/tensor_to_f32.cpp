#include "lemma/quant/tensor_to_f32.h"

#include "lemma/base/error.h"
#include "lemma/kernels/dequantize.h"

namespace lemma::quant {

MatrixShape matrix_shape(const Shape& shape) {
  if (shape.rank == 0) return {};
  const int64_t cols = shape[shape.rank - 1];
  return {shape.elements() / cols, cols};
}

std::vector<float> tensor_to_f32(const TensorView& view) {
  if (!kernels::can_dequantize(view.dtype)) fail<Unsupported>("cannot widen {} values to f32", dtype_name(view.dtype));
  const auto m = matrix_shape(view.shape);
  std::vector<float> out(static_cast<size_t>(view.elements()));
  const uint64_t row_bytes = view.bytes() / static_cast<uint64_t>(m.rows);
  for (int64_t r = 0; r < m.rows; ++r) {
    kernels::dequantize_row(view.dtype, view.bytes_ptr() + r * row_bytes, out.data() + r * m.cols, m.cols);
  }
  return out;
}

}  // namespace lemma::quant
