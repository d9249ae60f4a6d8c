// A matmul's weight operand as the kernels see it: the values' dtype (as the file stores them) and
// how the rows lie (tensor_view.h's RowLayout). The 16-row interleaved layouts are kernel layouts,
// made at load (interleaved_blocks.h), not file dtypes. Plain data.
#pragma once

#include <cstdint>
#include <string>

#include "lemma/tensor/tensor_view.h"

namespace lemma::kernels {

struct MatrixFormat {
  DType dtype = DType::kF32;
  RowLayout layout = RowLayout::kPlain;

  constexpr MatrixFormat() = default;
  constexpr MatrixFormat(DType d, RowLayout l = RowLayout::kPlain) : dtype(d), layout(l) {}  // NOLINT: a plain dtype is a format
  constexpr bool interleaved() const { return layout == RowLayout::kInterleaved16; }
  constexpr bool operator==(const MatrixFormat&) const = default;
};

constexpr MatrixFormat interleaved(DType plain) { return {plain, RowLayout::kInterleaved16}; }
inline MatrixFormat format_of(const TensorView& w) { return {w.dtype, w.layout}; }

// "q8_0", "q8_0x16" (the interleaved form), as logs and kernel names spell them.
std::string format_name(MatrixFormat format);
// Values per block along K: the dtype's block, except the interleaved f16 (16) and bf16 (32, whole
// vdpbf16ps / AMX chunks) forms. K must be a multiple of it.
int64_t format_block_values(MatrixFormat format);

}  // namespace lemma::kernels
