// GPTQ (Frantar et al. 2022, "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained
// Transformers"): group-wise int codes chosen one input channel at a time, each channel's rounding
// error pushed onto the channels not yet quantized through the inverse of the layer input's Hessian
// H = sum x x^T over calibration rows, so that the layer's outputs on inputs like those (not its
// weights) stay close: it minimises sum_n (w_n - q_n)^T H (w_n - q_n) greedily.
//
// As the reference implementation (AutoGPTQ's fasterquant): dampening 1% of the mean diagonal,
// act-order takes the channels by decreasing H_kk and gives them groups in that order
// (g_idx[perm[i]] = i / group_size), a group's scale and zero point come from its channels'
// values at the moment the walk reaches the group (GroupRounding's GPTQ rules), and the updates
// use the upper Cholesky factor of H^-1. Two differences: every later channel is updated before a
// group's parameters are chosen (the reference's lazy 128-column blocks choose some groups from
// values not yet updated by the block's earlier channels), and inputs that calibration never saw
// (H_kk = 0) keep their weights (the reference zeroes them).
// Pure functions; gptq_quantize runs rows on up to `threads` threads, with the same result for any count.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "lemma/quant/grouped_int_weight.h"
#include "lemma/quant/weight_format.h"

namespace lemma::quant {

// sum x x^T over the rows seen: [dim, dim], row-major f32 (each add's rows are summed in f32 by
// the matmul kernels, then added to the running sum in double).
class InputHessian {
 public:
  explicit InputHessian(int64_t dim);
  // x: [rows, dim] row-major.
  void add(std::span<const float> x, int64_t rows);
  int64_t dim() const { return dim_; }
  int64_t rows() const { return rows_; }
  double at(int64_t i, int64_t j) const { return sum_[static_cast<size_t>(i * dim_ + j)]; }
  size_t bytes() const { return sum_.size() * sizeof(double); }

 private:
  int64_t dim_ = 0, rows_ = 0;
  std::vector<double> sum_;
  std::vector<float> transposed_, product_;  // scratch of add()
};

struct GptqOptions {
  int bits = 4;             // 4 or 8
  int64_t group_size = 128; // <= 0: one group per output channel
  bool sym = true;          // GroupRounding::kGptqSym, else kGptqAsym
  bool act_order = false;   // desc_act
  double damp = 0.01;       // of the mean diagonal (percdamp)
  int threads = 1;
};

// What a quantizer needs to run GPTQ: the input Hessian of a matrix by tensor name (null: none,
// round to nearest instead), and the threads it may use.
struct GptqCalibration {
  std::function<const InputHessian*(const std::string& tensor_name)> hessian;
  int threads = 1;
};

// Quantizes a row-major [N, K] f32 matrix against `hessian` (dim K). Throws InvalidArgument for bad
// shapes or when H + damping is not positive definite even at 100x the dampening.
GroupedIntWeight gptq_quantize(std::span<const float> values, int64_t N, int64_t K, const InputHessian& hessian,
                               const GptqOptions& options);

// The same walk for lemma's int8/int4 formats (weight_format.h): groups of spec's size in the stored
// order (the format has no act-order), each group's scale and zero point by quantize_weight's rule
// from its current values. Throws as quantize_weight, and as gptq_quantize for the Hessian.
QuantizedWeight gptq_quantize_weight(std::span<const float> values, int64_t rows, int64_t cols,
                                     const WeightQuantSpec& spec, const InputHessian& hessian, int threads = 1);

// The loss GPTQ minimises, sum_n (w_n - q_n)^T H (w_n - q_n), for [N, K] weights and their
// quantized values (dequantize_grouped, dequantize_weight).
double gptq_output_error(std::span<const float> values, std::span<const float> quantized, const InputHessian& hessian);

}  // namespace lemma::quant
