#include "lemma/kernels/matrix_format.h"

namespace lemma::kernels {

std::string format_name(MatrixFormat format) {
  return std::string(dtype_name(format.dtype)) + (format.interleaved() ? "x16" : "");
}

int64_t format_block_values(MatrixFormat format) {
  if (format.interleaved() && format.dtype == DType::kF16) return 16;
  if (format.interleaved() && format.dtype == DType::kBF16) return 32;
  return static_cast<int64_t>(dtype_info(format.dtype).block_elements);
}

}  // namespace lemma::kernels
