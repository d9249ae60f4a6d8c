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

// Blocking of the two factorisations below: panels of kPanel rows, the trailing rows updated in
// column chunks of kChunk so that a chunk of the panel (kPanel x kChunk doubles, 256 KiB) stays
// in cache while each trailing row's chunk takes every panel row's contribution. Unblocked, both
// streamed the whole trailing triangle once per row: 53 s for K = 4864 on this VM.
constexpr int64_t kPanel = 64, kChunk = 512;

// Rows [r0, r1) of a (columns >= their own index) -= sum over the panel rows p in [p0, p1) of a
// (disjoint from [r0, r1)) of coef(r, p) * row p. Every row sees the panel rows in order, whatever
// the blocking.
template <class Coef>
void subtract_panel(Matrix& a, int64_t K, int64_t r0, int64_t r1, int64_t p0, int64_t p1, Coef coef) {
  for (int64_t c0 = r0; c0 < K; c0 += kChunk) {
    const int64_t c1 = std::min(K, c0 + kChunk);
    for (int64_t r = r0; r < std::min(r1, c1); ++r) {
      double* row = a.data() + r * K;
      const int64_t from = std::max(r, c0);
      for (int64_t p = p0; p < p1; ++p) {
        const double f = coef(r, p);
        const double* src = a.data() + p * K;
        for (int64_t c = from; c < c1; ++c) row[c] -= f * src[c];
      }
    }
  }
}

// fn(ra, rb) over ranges of rows [r0, r1) on up to `threads` threads, cut so that each range has
// about the same number of columns >= its rows (row r of a K-wide triangle has K - r). Rows are
// updated independently, so the result does not depend on the cut.
template <class Fn>
void for_row_ranges(int64_t r0, int64_t r1, int64_t K, int threads, Fn fn) {
  const int64_t n = r1 - r0;
  const int t_count = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, n / 8)));
  if (t_count == 1) return fn(r0, r1);
  double total = 0.0;
  for (int64_t r = r0; r < r1; ++r) total += static_cast<double>(K - r);
  std::vector<int64_t> cuts = {r0};
  double seen = 0.0;
  for (int64_t r = r0; r < r1 && static_cast<int>(cuts.size()) < t_count; ++r) {
    seen += static_cast<double>(K - r);
    if (seen >= total * static_cast<double>(cuts.size()) / t_count) cuts.push_back(r + 1);
  }
  cuts.push_back(r1);
  std::vector<std::jthread> pool;
  for (size_t i = 1; i + 1 < cuts.size(); ++i) pool.emplace_back(fn, cuts[i], cuts[i + 1]);
  fn(cuts[0], cuts[1]);
}

// In place: the upper Cholesky factor U of a (a = U^T U) in the upper triangle (the lower one is
// left as it was). Per panel: its rows factored among themselves, then every later row updated
// by the panel (contiguous axpys: vectorised without reassociating sums). False when a is not
// positive definite.
bool cholesky_upper(Matrix& a, int64_t K, int threads) {
  for (int64_t j0 = 0; j0 < K; j0 += kPanel) {
    const int64_t j1 = std::min(K, j0 + kPanel);
    for (int64_t j = j0; j < j1; ++j) {
      double* row_j = a.data() + j * K;
      if (!(row_j[j] > 0.0)) return false;
      const double d = std::sqrt(row_j[j]);
      row_j[j] = d;
      for (int64_t k = j + 1; k < K; ++k) row_j[k] /= d;
      for (int64_t i = j + 1; i < j1; ++i) {
        double* row_i = a.data() + i * K;
        const double f = row_j[i];
        for (int64_t k = i; k < K; ++k) row_i[k] -= f * row_j[k];
      }
    }
    for_row_ranges(j1, K, K, threads, [&](int64_t ra, int64_t rb) {
      subtract_panel(a, K, ra, rb, j0, j1, [&](int64_t r, int64_t p) { return a[static_cast<size_t>(p * K + r)]; });
    });
  }
  return true;
}

// The inverse of the upper triangular u (upper triangle of `u`), bottom panel first: row i of the
// inverse is (e_i - sum over k > i of u_ik * row k) / u_ii; a panel takes the rows below it first
// (blocked), then its own.
Matrix upper_inverse(const Matrix& u, int64_t K, int threads) {
  Matrix inv(static_cast<size_t>(K * K), 0.0);
  for (int64_t i = 0; i < K; ++i) inv[static_cast<size_t>(i * K + i)] = 1.0;
  for (int64_t i1 = K; i1 > 0; i1 -= kPanel) {
    const int64_t i0 = std::max<int64_t>(0, i1 - kPanel);
    for_row_ranges(i0, i1, K, threads, [&](int64_t ra, int64_t rb) {
      for (int64_t k0 = i1; k0 < K; k0 += kPanel)
        subtract_panel(inv, K, ra, rb, k0, std::min(K, k0 + kPanel), [&](int64_t r, int64_t k) { return u[static_cast<size_t>(r * K + k)]; });
    });
    for (int64_t i = i1 - 1; i >= i0; --i) {
      double* row = inv.data() + i * K;
      const double* u_i = u.data() + i * K;
      for (int64_t k = i + 1; k < i1; ++k) {
        const double f = u_i[k];
        const double* later = inv.data() + k * K;
        for (int64_t c = k; c < K; ++c) row[c] -= f * later[c];
      }
      for (int64_t c = i; c < K; ++c) row[c] /= u_i[i];
    }
  }
  return inv;
}

// The upper Cholesky factor U of H^-1 (H^-1 = U^T U) for the permuted, dampened H; row i of U
// gives channel i's update of the later channels, U_ii its error's scale. With J the reversal of
// the channels: J H J = Uc^T Uc (Cholesky), so H = Lh^T Lh with Lh = J Uc J lower, H^-1 =
// Lh^-1 Lh^-T, and U = Lh^-T = J Uc^-T J: one factorisation and one triangular inverse.
std::vector<float> inverse_hessian_factor(const InputHessian& hessian, std::span<const int32_t> perm, double damp,
                                          int threads) {
  const int64_t K = hessian.dim();
  double mean_diag = 0.0;
  for (int64_t k = 0; k < K; ++k) mean_diag += hessian.at(k, k) > 0.0 ? hessian.at(k, k) : 1.0;
  mean_diag /= static_cast<double>(K);
  const auto reversed = [&](int64_t i) { return perm[static_cast<size_t>(K - 1 - i)]; };
  for (double factor = 1.0; factor <= 100.0; factor *= 10.0) {
    Matrix m(static_cast<size_t>(K * K));
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j) m[static_cast<size_t>(i * K + j)] = hessian.at(reversed(i), reversed(j));
    for (int64_t k = 0; k < K; ++k) {
      double& d = m[static_cast<size_t>(k * K + k)];
      if (d <= 0.0) d = 1.0;  // an input calibration never saw
      d += factor * damp * mean_diag;
    }
    if (!cholesky_upper(m, K, threads)) continue;
    const Matrix inv = upper_inverse(m, K, threads);
    std::vector<float> u(static_cast<size_t>(K * K), 0.0f);
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = i; j < K; ++j) u[static_cast<size_t>(i * K + j)] = static_cast<float>(inv[static_cast<size_t>((K - 1 - j) * K + (K - 1 - i))]);
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
  const std::vector<float> u = inverse_hessian_factor(hessian, perm, damp, threads);
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
