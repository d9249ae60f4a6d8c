#include "lemma/kernels/kernel_set.h"

#include <algorithm>

#include "lemma/base/error.h"
#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/reference/ops_reference.h"
#include "lemma/kernels/reference/vocab_ops_reference.h"
#include "lemma/kernels/x86/amx/amx_scratch.h"
#include "lemma/kernels/x86/simd/simd_kernels.h"

namespace lemma::kernels {

namespace {

namespace avx2 = x86::avx2;
namespace avx512 = x86::avx512;

// Row ops and vocabulary passes per ISA (AMX has no instructions for them and uses AVX-512's).
constexpr RowOps kReferenceRowOps{rmsnorm_reference, add_rmsnorm_reference, silu_mul_reference,
                                  softmax_reference, add_reference,         exp_reference};
constexpr RowOps kAvx2RowOps{avx2::rmsnorm, avx2::add_rmsnorm, avx2::silu_mul, avx2::softmax, avx2::add, avx2::exp_row};
constexpr RowOps kAvx512RowOps{avx512::rmsnorm, avx512::add_rmsnorm, avx512::silu_mul,
                               avx512::softmax, avx512::add,         avx512::exp_row};
constexpr VocabOps kReferenceVocabOps{copy_masking_nan_reference, max_ignoring_nan_reference, argmax_first_reference,
                                      divide_row_reference,       exp_block_sums_reference,   select_at_least_reference,
                                      first_above_reference};
constexpr VocabOps kAvx2VocabOps{avx2::copy_masking_nan, avx2::max_ignoring_nan, avx2::argmax_first, avx2::divide_row,
                                 avx2::exp_block_sums,   avx2::select_at_least,  avx2::first_above};
constexpr VocabOps kAvx512VocabOps{avx512::copy_masking_nan, avx512::max_ignoring_nan, avx512::argmax_first,
                                   avx512::divide_row,       avx512::exp_block_sums,   avx512::select_at_least,
                                   avx512::first_above};

// Vectorised block decoders; every other dtype keeps its reference decoder.
struct Decoder {
  DType type;
  Isa isa;
  DequantizeFn fn;
};
constexpr Decoder kDecoders[] = {
    {DType::kQ8_0, Isa::kAvx2, avx2::decode_q8_0},     {DType::kQ4_0, Isa::kAvx2, avx2::decode_q4_0},
    {DType::kQ4_K, Isa::kAvx2, avx2::decode_q4_k},     {DType::kQ5_K, Isa::kAvx2, avx2::decode_q5_k},
    {DType::kQ6_K, Isa::kAvx2, avx2::decode_q6_k},     {DType::kQ8_0, Isa::kAvx512, avx512::decode_q8_0},
    {DType::kQ4_0, Isa::kAvx512, avx512::decode_q4_0}, {DType::kQ4_K, Isa::kAvx512, avx512::decode_q4_k},
    {DType::kQ5_K, Isa::kAvx512, avx512::decode_q5_k}, {DType::kQ6_K, Isa::kAvx512, avx512::decode_q6_k},
};

// Flash attention on AVX-512: the AVX512_BF16 build where the CPU has it (it differs only for bf16
// caches). On AMX: the tile kernel for a bf16 cache with heads of at most 256, the AVX-512 kernel for
// everything else (per model and cache dtype the choice never changes, so neither do the bits).
FlashSplitFn avx512_flash(const CpuFeatures& f) { return f.avx512_bf16 ? x86::avx512_bf16::flash_split : avx512::flash_split; }
void amx_flash(const FlashSplitArgs& args) {
  constexpr int64_t kAmxMaxHeadDim = 256;
  if (args.kv_dtype == KvDtype::kBf16 && args.head_dim <= kAmxMaxHeadDim) {
    x86::flash_split_amx_bf16(args);
  } else {
    avx512_flash(cpu_features())(args);
  }
}

bool has(CpuFeature needed, const CpuFeatures& f) {
  switch (needed) {
    case CpuFeature::kNone: return true;
    case CpuFeature::kAvx512Bf16: return f.avx512_bf16;
    case CpuFeature::kAvx512Vnni: return f.avx512_vnni;
  }
  return false;
}

}  // namespace

bool runs_here(const MatmulKernel& kernel) {
  return kernel.isa <= detected_isa() && has(kernel.needs, cpu_features());
}

KernelSet::KernelSet(Isa isa) : isa_(isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::kScalar:
      row_ = kReferenceRowOps, vocab_ = kReferenceVocabOps, flash_split_ = flash_split_reference;
      break;
    case Isa::kAvx2:
      row_ = kAvx2RowOps, vocab_ = kAvx2VocabOps, flash_split_ = avx2::flash_split;
      break;
    case Isa::kAvx512:
      row_ = kAvx512RowOps, vocab_ = kAvx512VocabOps, flash_split_ = avx512_flash(f);
      break;
    case Isa::kAmx:
      row_ = kAvx512RowOps, vocab_ = kAvx512VocabOps, flash_split_ = amx_flash;
      scratch_bytes_ = x86::amx::kAmxScratchBytes;
      break;
  }
  for (size_t t = 0; t < decoders_.size(); ++t) {
    const auto type = static_cast<DType>(t);
    decoders_[t] = dequantize_fn(type);
    Isa best = Isa::kScalar;
    for (const Decoder& d : kDecoders) {
      if (d.type == type && d.isa <= isa && d.isa >= best) best = d.isa, decoders_[t] = d.fn;
    }
  }
  // Rows in table order; a stable sort by ISA keeps the table's order within one ISA.
  for (const MatmulKernel& k : matmul_kernels()) {
    if (k.isa > isa || !has(k.needs, f)) continue;
    Choices& choices = matmul_[static_cast<size_t>(k.weight.dtype)][static_cast<size_t>(k.weight.layout)]
                              [static_cast<size_t>(k.precision)];
    auto free = std::find(choices.begin(), choices.end(), nullptr);
    if (free == choices.end()) fail<InvalidArgument>("kernels: more than {} {} matmul kernels", kMaxChoices, format_name(k.weight));
    *free = &k;
    std::stable_sort(choices.begin(), free + 1, [](const MatmulKernel* a, const MatmulKernel* b) { return a->isa > b->isa; });
  }
}

const MatmulKernel* KernelSet::pick(MatrixFormat weight, MatmulPrecision precision, int64_t M) const {
  if (weight.dtype >= DType::kCount) return nullptr;
  for (const MatmulKernel* k :
       matmul_[static_cast<size_t>(weight.dtype)][static_cast<size_t>(weight.layout)][static_cast<size_t>(precision)]) {
    if (k != nullptr && M >= k->min_rows) return k;
  }
  return nullptr;
}

const MatmulKernel* KernelSet::matmul(MatrixFormat weight, MatmulPrecision precision, int64_t M) const {
  const MatmulKernel* k = pick(weight, precision, M);
  if (k == nullptr && precision != MatmulPrecision::kF32Activations) k = pick(weight, MatmulPrecision::kF32Activations, M);
  return k;
}

const KernelSet& kernel_set(Isa isa) {
  static const KernelSet sets[] = {KernelSet(Isa::kScalar), KernelSet(Isa::kAvx2), KernelSet(Isa::kAvx512),
                                   KernelSet(Isa::kAmx)};
  return sets[static_cast<int>(isa)];
}

DequantizeFn dequantize_fn(DType type, Isa isa) { return kernel_set(isa).decoder(type); }

}  // namespace lemma::kernels
