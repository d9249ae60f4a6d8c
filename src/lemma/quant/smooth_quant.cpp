#include "lemma/quant/smooth_quant.h"

#include <algorithm>
#include <cmath>

#include "lemma/base/error.h"

namespace lemma::quant {

void accumulate_column_absmax(std::span<const float> w, int64_t rows, int64_t cols, std::span<float> absmax) {
  if (static_cast<int64_t>(w.size()) != rows * cols || static_cast<int64_t>(absmax.size()) != cols)
    fail<InvalidArgument>("column absmax of a [{}, {}] matrix: {} values, {} outputs", rows, cols, w.size(), absmax.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      absmax[static_cast<size_t>(c)] = std::max(absmax[static_cast<size_t>(c)], std::fabs(w[static_cast<size_t>(r * cols + c)]));
}

std::vector<float> smoothing_factors(std::span<const float> x, std::span<const float> w, float alpha) {
  if (!(alpha >= 0.0f && alpha <= 1.0f)) fail<InvalidArgument>("smoothing alpha {} is outside [0, 1]", alpha);
  if (x.size() != w.size()) fail<InvalidArgument>("{} activation ranges for {} weight columns", x.size(), w.size());
  std::vector<float> s(x.size(), 1.0f);
  for (size_t j = 0; j < x.size(); ++j) {
    if (x[j] > 0.0f && w[j] > 0.0f)
      s[j] = std::max(1e-5f, static_cast<float>(std::pow(static_cast<double>(x[j]), alpha) /
                                                std::pow(static_cast<double>(w[j]), 1.0 - alpha)));
  }
  return s;
}

void divide_norm(std::span<float> norm, std::span<const float> s) {
  if (norm.size() != s.size()) fail<InvalidArgument>("norm of {} channels, {} smoothing factors", norm.size(), s.size());
  for (size_t j = 0; j < norm.size(); ++j) norm[j] /= s[j];
}

void scale_columns(std::span<float> w, int64_t rows, int64_t cols, std::span<const float> s) {
  if (static_cast<int64_t>(w.size()) != rows * cols || static_cast<int64_t>(s.size()) != cols)
    fail<InvalidArgument>("scaling the columns of a [{}, {}] matrix by {} factors", rows, cols, s.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) w[static_cast<size_t>(r * cols + c)] *= s[static_cast<size_t>(c)];
}

}  // namespace lemma::quant
