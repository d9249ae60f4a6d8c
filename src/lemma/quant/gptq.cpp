#include "lemma/quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/matmul.h"

namespace lemma::quant {

namespace {

using Matrix = std::vector<double>;  // square, row-major

// In place: the lower Cholesky factor L of a (a = L L^T; the upper triangle is left as it was).
// False when a is not positive definite.
bool cholesky_lower(Matrix& a, int64_t K) {
  for (int64_t j = 0; j < K; ++j) {
    double* row_j = a.data() + j * K;
    double s = row_j[j];
    for (int64_t k = 0; k < j; ++k) s -= row_j[k] * row_j[k];
    if (!(s > 0.0)) return false;
    row_j[j] = std::sqrt(s);
    for (int64_t i = j + 1; i < K; ++i) {
      double* row_i = a.data() + i * K;
      double t = row_i[j];
      for (int64_t k = 0; k < j; ++k) t -= row_i[k] * row_j[k];
      row_i[j] = t / row_j[j];
    }
  }
  return true;
}

// (L L^T)^-1 from the lower factor L (in the lower triangle of l): L^-1 row by row (row i of L^-1
// is e_i minus earlier rows, over L_ii), then L^-T L^-1.
Matrix inverse_from_cholesky(const Matrix& l, int64_t K) {
  Matrix inv(static_cast<size_t>(K * K), 0.0);
  for (int64_t i = 0; i < K; ++i) {
    double* row = inv.data() + i * K;
    row[i] = 1.0;
    for (int64_t k = 0; k < i; ++k) {
      const double f = l[static_cast<size_t>(i * K + k)];
      const double* prev = inv.data() + k * K;
      for (int64_t c = 0; c <= k; ++c) row[c] -= f * prev[c];
    }
    const double d = l[static_cast<size_t>(i * K + i)];
    for (int64_t c = 0; c <= i; ++c) row[c] /= d;
  }
  Matrix h(static_cast<size_t>(K * K), 0.0);
  for (int64_t k = 0; k < K; ++k) {
    const double* r = inv.data() + k * K;
    for (int64_t a = 0; a <= k; ++a) {
      double* out = h.data() + a * K;
      const double f = r[a];
      for (int64_t b = 0; b <= k; ++b) out[b] += f * r[b];
    }
  }
  return h;
}

// The upper Cholesky factor U of H^-1 (H^-1 = U^T U) for the permuted, dampened H; row i of U
// gives channel i's update of the later channels, U_ii its error's scale.
std::vector<float> inverse_hessian_factor(const InputHessian& hessian, std::span<const int32_t> perm, double damp) {
  const int64_t K = hessian.dim();
  double mean_diag = 0.0;
  for (int64_t k = 0; k < K; ++k) mean_diag += hessian.at(k, k) > 0.0 ? hessian.at(k, k) : 1.0;
  mean_diag /= static_cast<double>(K);
  for (double factor = 1.0; factor <= 100.0; factor *= 10.0) {
    Matrix h(static_cast<size_t>(K * K));
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j) h[static_cast<size_t>(i * K + j)] = hessian.at(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    for (int64_t k = 0; k < K; ++k) {
      double& d = h[static_cast<size_t>(k * K + k)];
      if (d <= 0.0) d = 1.0;  // an input calibration never saw
      d += factor * damp * mean_diag;
    }
    if (!cholesky_lower(h, K)) continue;
    Matrix inv = inverse_from_cholesky(h, K);
    if (!cholesky_lower(inv, K)) continue;
    std::vector<float> u(static_cast<size_t>(K * K), 0.0f);
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = i; j < K; ++j) u[static_cast<size_t>(i * K + j)] = static_cast<float>(inv[static_cast<size_t>(j * K + i)]);
    return u;
  }
  fail<InvalidArgument>("GPTQ: the input Hessian ({} x {}, {} calibration rows) is not positive definite even with "
                        "{}x the dampening", K, K, hessian.rows(), 100);
}

}  // namespace

InputHessian::InputHessian(int64_t dim) : dim_(dim), sum_(static_cast<size_t>(dim * dim), 0.0) {
  if (dim <= 0) fail<InvalidArgument>("input Hessian of dimension {}", dim);
}

void InputHessian::add(std::span<const float> x, int64_t rows) {
  if (rows <= 0) return;
  if (static_cast<int64_t>(x.size()) < rows * dim_) fail<InvalidArgument>("{} values for {} rows of {}", x.size(), rows, dim_);
  // x^T x as y = a . a^T with a = x^T ([dim, rows]): the f32 matmul kernels.
  transposed_.resize(static_cast<size_t>(dim_ * rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < dim_; ++k) transposed_[static_cast<size_t>(k * rows + r)] = x[static_cast<size_t>(r * dim_ + k)];
  product_.resize(static_cast<size_t>(dim_ * dim_));
  kernels::matmul(transposed_.data(), rows, dim_, TensorView{transposed_.data(), DType::kF32, Shape{dim_, rows}},
                  product_.data(), dim_);
  for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += product_[i];
  rows_ += rows;
}

namespace {

// The GPTQ walk: each row's channels in `perm` order, begin_group(n, g, values) at the start of
// each group (g = i / group, `values` the group's current values in walk order), then
// round(n, k, x) -> the value of the code it stored for channel k = perm[i]; the error goes to the
// later channels. Rows are independent: split over `threads`.
template <class BeginGroup, class Round>
void gptq_walk(std::span<const float> values, int64_t N, int64_t K, const InputHessian& hessian,
               std::span<const int32_t> perm, int64_t group, double damp, int threads, BeginGroup begin_group,
               Round round) {
  const std::vector<float> u = inverse_hessian_factor(hessian, perm, damp);
  const auto quantize_rows = [&](int64_t n0, int64_t n1) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t i = 0; i < K; ++i) row[static_cast<size_t>(i)] = values[static_cast<size_t>(n * K + perm[static_cast<size_t>(i)])];
      for (int64_t i = 0; i < K; ++i) {
        if (i % group == 0)
          begin_group(n, i / group, std::span<const float>(row).subspan(static_cast<size_t>(i), static_cast<size_t>(std::min(group, K - i))));
        const float* ui = u.data() + i * K;
        const float err = (row[static_cast<size_t>(i)] - round(n, perm[static_cast<size_t>(i)], row[static_cast<size_t>(i)])) / ui[i];
        for (int64_t j = i + 1; j < K; ++j) row[static_cast<size_t>(j)] -= err * ui[j];
      }
    }
  };
  const int t_count = static_cast<int>(std::clamp<int64_t>(threads, 1, N));
  std::vector<std::jthread> pool;
  for (int t = 1; t < t_count; ++t) pool.emplace_back(quantize_rows, N * t / t_count, N * (t + 1) / t_count);
  quantize_rows(0, N / t_count);
}

void check_matrix(std::span<const float> values, int64_t N, int64_t K, const InputHessian& hessian) {
  if (N <= 0 || K <= 0 || static_cast<int64_t>(values.size()) != N * K)
    fail<InvalidArgument>("{} values given for a [{}, {}] matrix", values.size(), N, K);
  if (hessian.dim() != K) fail<InvalidArgument>("GPTQ: a Hessian of dimension {} for {} inputs", hessian.dim(), K);
}

}  // namespace

GroupedIntWeight gptq_quantize(std::span<const float> values, int64_t N, int64_t K, const InputHessian& hessian,
                               const GptqOptions& o) {
  if (o.bits != 4 && o.bits != 8) fail<InvalidArgument>("GPTQ weights have 4 or 8 bits, not {}", o.bits);
  check_matrix(values, N, K, hessian);
  const int64_t g = o.group_size <= 0 ? K : o.group_size;
  std::vector<int32_t> perm(static_cast<size_t>(K));
  std::iota(perm.begin(), perm.end(), 0);
  if (o.act_order)
    std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) { return hessian.at(a, a) > hessian.at(b, b); });

  GroupedIntWeight w;
  w.bits = o.bits;
  w.out_features = N;
  w.in_features = K;
  w.num_groups = (K + g - 1) / g;
  w.codes.resize(static_cast<size_t>(N * K));
  w.zeros.resize(static_cast<size_t>(w.num_groups * N));
  w.scales.resize(static_cast<size_t>(w.num_groups * N));
  w.g_idx.resize(static_cast<size_t>(K));
  for (int64_t i = 0; i < K; ++i) w.g_idx[static_cast<size_t>(perm[static_cast<size_t>(i)])] = static_cast<int32_t>(i / g);
  const int maxq = w.max_code();
  const GroupRounding rounding = o.sym ? GroupRounding::kGptqSym : GroupRounding::kGptqAsym;
  std::vector<GroupParams> current(static_cast<size_t>(N));  // each row's group being walked
  gptq_walk(
      values, N, K, hessian, perm, g, o.damp, o.threads,
      [&](int64_t n, int64_t group, std::span<const float> x) {
        const GroupParams p = choose_group_params(x, maxq, rounding);
        current[static_cast<size_t>(n)] = p;
        w.scales[static_cast<size_t>(group * N + n)] = kernels::f32_to_f16(p.scale);
        w.zeros[static_cast<size_t>(group * N + n)] = static_cast<uint8_t>(p.zero);
      },
      [&](int64_t n, int64_t k, float x) {
        const GroupParams& p = current[static_cast<size_t>(n)];
        const int q = p.code(x, maxq);
        w.codes[static_cast<size_t>(n * K + k)] = static_cast<uint8_t>(q);
        return p.value(q);
      });
  return w;
}

QuantizedWeight gptq_quantize_weight(std::span<const float> values, int64_t rows, int64_t cols,
                                     const WeightQuantSpec& spec, const InputHessian& hessian, int threads) {
  QuantizedWeight w = empty_quantized_weight(rows, cols, spec);
  check_matrix(values, rows, cols, hessian);
  std::vector<int32_t> order(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  std::vector<WeightGroupRounding> current(static_cast<size_t>(rows));
  gptq_walk(
      values, rows, cols, hessian, order, spec.group_for(cols), 0.01, threads,
      [&](int64_t n, int64_t group, std::span<const float> x) {
        current[static_cast<size_t>(n)] = weight_group_rounding(x, spec);
        set_group(w, n, group, current[static_cast<size_t>(n)]);
      },
      [&](int64_t n, int64_t k, float x) {
        const int q = current[static_cast<size_t>(n)].code(x, spec);
        set_code(w, n, k, q);
        return current[static_cast<size_t>(n)].value(q);
      });
  return w;
}

double gptq_output_error(std::span<const float> values, std::span<const float> quantized, const InputHessian& hessian) {
  const int64_t K = hessian.dim();
  if (values.size() != quantized.size() || values.size() % static_cast<size_t>(K) != 0)
    fail<InvalidArgument>("output error of {} values against {} quantized ones and a Hessian of {}", values.size(),
                          quantized.size(), K);
  double total = 0.0;
  std::vector<double> e(static_cast<size_t>(K));
  for (size_t row = 0; row < values.size(); row += static_cast<size_t>(K)) {
    for (int64_t k = 0; k < K; ++k) e[static_cast<size_t>(k)] = static_cast<double>(values[row + k]) - quantized[row + k];
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j) total += e[static_cast<size_t>(i)] * hessian.at(i, j) * e[static_cast<size_t>(j)];
  }
  return total;
}

}  // namespace lemma::quant
