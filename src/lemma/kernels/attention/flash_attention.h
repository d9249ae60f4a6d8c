// Flash attention (G16) building blocks: the split kernel (one fixed range of keys for the query
// heads that share a KV head, online softmax: running max and sum, rescaled per 16-key tile in
// the scalar reference and per chunk of up to 256 keys in the vector kernels, never materialising
// the score matrix) and the fixed-order merge of split partials.
// Pure functions over caller-owned memory; no allocation; thread-safe for distinct partials.
//
// Determinism: splits start at multiples of kFlashSplitKeys, and inside a call the reference's
// tiles start at absolute multiples of 16 and the vector kernels' chunks at key_begin + k * 256,
// each row's keys cut at its own first visible key. A query's partial depends only on its vector,
// its position, the split's keys and the ISA (never on the other rows computed with it), and
// partials are merged in split order, so results are bitwise independent of batch composition,
// prefill chunking (a decode row equals the same row inside a prefill) and thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/isa.h"

namespace lemma::kernels {

// Keys per split; split s covers absolute key positions [s * kFlashSplitKeys, (s + 1) * kFlashSplitKeys).
inline constexpr int64_t kFlashSplitKeys = 256;

// Floats per query in a partial: max, sum, accumulator[head_dim].
inline constexpr int64_t flash_partial_stride(int64_t head_dim) { return head_dim + 2; }

// Fills args.partial for the split. Each ISA's result differs from the scalar one by rounding
// (vector exp, dot-product order; with a bf16 cache on AVX512_BF16, q . k from q's two bf16
// halves, see x86/avx512bf16/flash_bf16_dots.h); per ISA and CPU it is deterministic.
void flash_attention_split(const FlashSplitArgs& args, Isa isa);
void flash_attention_split(const FlashSplitArgs& args);  // detected_isa()

// One split kernel this machine can run: the one flash_attention_split(args, isa) uses, or (name
// "avx512" on a CPU with AVX512_BF16) the plain AVX-512 kernel that CPUs without it get, or
// ("amx_emulated", any AVX-512 CPU) the AMX kernel on the tile emulator, for tests.
// The AMX kernel (Isa::kAmx) takes bf16 caches with head_dim <= 256 on AMX-BF16 tiles
// (x86/amx/flash_split_amx_kernel.h) and gives everything else to the AVX-512 kernel.
struct FlashSplitKernel {
  const char* name;  // "scalar", "avx2", "avx512", "avx512_bf16", "amx_emulated", "amx"
  Isa isa;           // the ISA it needs
  void (*run)(const FlashSplitArgs&);
};
// Every split kernel this machine can run, lowest ISA first (tests hold each against the reference).
std::vector<FlashSplitKernel> flash_split_kernels();

// Folds one split's partial into a running total (both [head_dim + 2], see FlashSplitArgs); fold
// the splits in increasing order. A total whose max is -inf is empty and becomes a copy of `part`;
// a part that saw no key (max -inf), or the total itself (part == total), leaves it unchanged.
void flash_merge(float* total, const float* part, int64_t head_dim);

// out[head_dim] = accumulator / sum of a merged total; zeros when no key was seen (sum 0).
void flash_finish(const float* total, int64_t head_dim, float* out);

}  // namespace lemma::kernels
