#include "lemma/tensor/tensor_view.h"

#include <fmt/format.h>

#include "lemma/base/error.h"

namespace lemma {

Shape::Shape(std::initializer_list<int64_t> d) {
  if (d.size() > kMaxDims) fail<InvalidArgument>("shape of rank {} exceeds {}", d.size(), kMaxDims);
  for (int64_t v : d) dims[static_cast<size_t>(rank++)] = v;
}

int64_t Shape::elements() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank != other.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<size_t>(i)] != other.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += fmt::format("{}{}", i ? ", " : "", dims[static_cast<size_t>(i)]);
  return s + "]";
}

uint64_t TensorView::bytes() const {
  if (layout == RowLayout::kInterleaved16 && shape.rank == 2) {
    const auto rows = static_cast<uint64_t>((shape[0] + 15) / 16 * 16);
    return rows * dtype_bytes(dtype, static_cast<uint64_t>(shape[1])).value_or(0);
  }
  return dtype_bytes(dtype, static_cast<uint64_t>(elements())).value_or(0);
}

}  // namespace lemma
