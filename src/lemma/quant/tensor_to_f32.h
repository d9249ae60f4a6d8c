// Widens a stored tensor (f32, f16, bf16 or any GGUF block format lemma can dequantize) to f32,
// row by row with the kernels' reference dequantizers. Pure; thread-safe.
#pragma once

#include <vector>

#include "lemma/tensor/tensor_view.h"

namespace lemma::quant {

// All elements in storage order. Throws Unsupported for dtypes that cannot be widened.
std::vector<float> tensor_to_f32(const TensorView& view);

// Rows and row length of a tensor seen as a matrix: [product of outer dims, innermost dim].
struct MatrixShape {
  int64_t rows = 1, cols = 1;
};
MatrixShape matrix_shape(const Shape& shape);

}  // namespace lemma::quant
