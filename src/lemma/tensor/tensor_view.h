// TensorView: a non-owning, typed, shaped view of bytes (e.g. inside an mmap'ed model file).
// Shapes are row-major, outermost dimension first (PyTorch order): a [rows, cols] matrix has
// contiguous rows. GGUF lists dimensions innermost first; its loader reverses them.
// Views are trivially copyable and never own memory; whoever made the bytes keeps them alive.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "lemma/tensor/dtype.h"

namespace lemma {

constexpr int kMaxDims = 8;

struct Shape {
  std::array<int64_t, kMaxDims> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  // Product of all dimensions (1 for rank 0).
  int64_t elements() const;
  bool operator==(const Shape& other) const;
  std::string to_string() const;  // "[2, 3]"
};

// How a matrix's rows lie in memory. kInterleaved16: rows in groups of 16 (the last group padded),
// interleaved block by block as kernels/interleaved_blocks.h describes for each dtype; the model
// re-lays matrices so at load for the kernels, and no file stores it.
enum class RowLayout : uint8_t { kPlain, kInterleaved16 };

struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::kF32;  // the values' type, as the file stores them
  Shape shape;
  RowLayout layout = RowLayout::kPlain;

  int64_t elements() const { return shape.elements(); }
  // Byte size of the (contiguous) data (whole groups of 16 rows when interleaved).
  uint64_t bytes() const;
  const uint8_t* bytes_ptr() const { return static_cast<const uint8_t*>(data); }
  template <typename T>
  const T* as() const { return static_cast<const T*>(data); }
};

}  // namespace lemma
