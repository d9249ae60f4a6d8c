// The one kernel registry: every op's implementation for one ISA on this machine, resolved once
// (on first use of that ISA) from the kernel tables — matmul by weight dtype x activation
// precision (registry.cpp's rows), flash attention, block decoders, row ops and vocabulary passes.
// A model or plan looks its kernels up here when it is built; calls then go straight to the
// function. CPU features a kernel needs beyond its ISA (VNNI, AVX512_BF16) are checked here, once.
// Read-only after construction; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/registry.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

// Row ops (ops.h), n values each.
struct RowOps {
  void (*rmsnorm)(const float*, const float*, float, float*, int64_t);
  void (*add_rmsnorm)(float*, const float*, const float*, float, float*, int64_t);
  void (*silu_mul)(const float*, const float*, float*, int64_t);
  void (*softmax)(const float*, float*, int64_t);
  void (*add)(const float*, const float*, float*, int64_t);
  void (*exp)(const float*, float*, int64_t);
};

// Vocabulary passes of sampling (vocab_ops.h), n values each.
struct VocabOps {
  int64_t (*copy_masking_nan)(const float*, float*, int64_t);
  float (*max_ignoring_nan)(const float*, int64_t);
  int64_t (*argmax_first)(const float*, int64_t);
  void (*divide_row)(const float*, float, float*, int64_t);
  double (*exp_block_sums)(const float*, float, float*, double*, int64_t);
  int64_t (*select_at_least)(const float*, float, int32_t*, int64_t);
  int64_t (*first_above)(const float*, float, int64_t);
};

using FlashSplitFn = void (*)(const FlashSplitArgs&);

class KernelSet {
 public:
  explicit KernelSet(Isa isa);

  Isa isa() const { return isa_; }
  const RowOps& row_ops() const { return row_; }
  const VocabOps& vocab_ops() const { return vocab_; }
  FlashSplitFn flash_split() const { return flash_split_; }
  // The most KernelScratch bytes any of these kernels asks for (0: none uses one; the AMX kernels
  // stage tiles there), to grow each thread's scratch once before the first call.
  size_t scratch_bytes() const { return scratch_bytes_; }
  // The fastest block decoder for `type` (bit-identical to the reference); nullptr if none.
  DequantizeFn decoder(DType type) const { return decoders_[static_cast<size_t>(type)]; }
  // The matmul kernel for `weight` with `precision` (or f32 activations when `weight` has no kernel
  // of that precision) and M rows of x; nullptr when there is none. K is not checked here.
  const MatmulKernel* matmul(MatrixFormat weight, MatmulPrecision precision, int64_t M) const;

 private:
  // Per (dtype, layout, precision): the rows this machine runs under isa_, highest ISA first; the first
  // whose min_rows <= M is taken (an AMX row, then the VNNI row it hands small M to).
  static constexpr size_t kMaxChoices = 4;
  using Choices = std::array<const MatmulKernel*, kMaxChoices>;
  const MatmulKernel* pick(MatrixFormat weight, MatmulPrecision precision, int64_t M) const;

  Isa isa_;
  RowOps row_;
  VocabOps vocab_;
  FlashSplitFn flash_split_;
  size_t scratch_bytes_ = 0;
  std::array<DequantizeFn, static_cast<size_t>(DType::kCount)> decoders_{};
  static constexpr size_t kNumLayouts = 2;  // RowLayout's values
  std::array<std::array<std::array<Choices, kNumMatmulPrecisions>, kNumLayouts>, static_cast<size_t>(DType::kCount)>
      matmul_{};
};

// The set for `isa`, built once per process. Any ISA may be looked up (names, tests); running a
// kernel needs isa <= detected_isa().
const KernelSet& kernel_set(Isa isa);

}  // namespace lemma::kernels
