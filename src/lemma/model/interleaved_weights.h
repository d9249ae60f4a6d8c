// Re-lays a loaded model's GGUF Q8_0 / Q4_0 / Q5_0 / Q2_K..Q6_K matrices into 16-row interleaved blocks
// (kernels/interleaved_blocks.h) once at load, where the interleaved int8 kernels will run
// them: about 3x fewer instructions per byte of W than the GGUF order, so Q8_0/Q4_0/Q5_0 decode reaches
// the memory bandwidth and prefill runs ~2.4x faster. Codes and scales are moved, never changed;
// only the f32 summation order of a row's blocks differs from the plain kernels (one accumulator,
// blocks in order; both within rounding of the exact product). bf16 matrices (K a multiple of 32)
// become bf16x16 from AVX2 up: one vdpbf16ps (AVX512_BF16) per 16 rows' pairs, no horizontal
// sums (values moved, never changed; each output one accumulator over k instead of 16 lanes).
// Off where it would not pay or cannot run (kernels/kernel_policy.h's interleave_pays): below AVX2,
// or f32 activations forced; and when RuntimeOptions::interleave is off. Every form has an AVX2
// kernel too (int8: vpmaddubsw; bf16x16: vdpbf16ps's bits by FMAs under DAZ/FTZ), so CPUs without
// AVX-512 (or without VNNI / AVX512_BF16) interleave every type above; bf16x16 then runs with bf16
// activations where plain bf16 would keep f32 ones.
// A GPTQ act-order down projection's input order (LayerWeights::down_order) is folded into gate and
// up where both are interleaved: their copies take rows in that order, so silu(gate) * up comes out
// in the order down reads, and down_order is cleared (no gather at run time).
// An untied token embedding keeps its view (rows are read one at a time); a tied one becomes the
// interleaved LM head's view, whose rows layers::read_row() reads back bit for bit.
#pragma once

#include <memory>

#include "lemma/model/model_weights.h"
#include "lemma/model/runtime_options.h"

namespace lemma {

// Whether a model loaded with `runtime` interleaves its `plain` matrices (the conditions above).
bool interleaving_enabled(DType plain, const RuntimeOptions& runtime);

// Replaces the views of every Q8_0/Q4_0/Q5_0/Q2_K..Q6_K/bf16 matrix in `weights` (q, k, v, o, gate, up, down,
// lm_head) by interleaved copies where interleaving_enabled(its dtype); returns the owner of those copies (null
// when nothing was interleaved). Logs what it did and how long it took.
// `release_sources`: the caller's owner holds the only reference to the matrices' source bytes and
// nothing reads them again (Model::open of a GGUF file), so their whole pages go back to the OS
// (MADV_DONTNEED: a file mapping re-reads them on access, a copy load frees them) and the process
// holds one copy of the weights, not two (a tied embedding included: see above).
std::shared_ptr<const void> interleave_matmul_weights(ModelWeights& weights, const RuntimeOptions& runtime,
                                                      bool release_sources = false);

}  // namespace lemma
