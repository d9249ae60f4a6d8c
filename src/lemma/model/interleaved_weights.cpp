#include "lemma/model/interleaved_weights.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "lemma/base/logging.h"
#include "lemma/base/progress.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/matrix_format.h"

namespace lemma {

namespace {

// 2 MiB-aligned, huge-page-advised bytes (as copy loads are): the kernels stream them every step.
struct AlignedBuffer {
  static constexpr size_t kAlign = size_t{2} << 20;
  explicit AlignedBuffer(size_t n) : bytes(new(std::align_val_t{kAlign}) uint8_t[n]) {
    madvise(bytes, n, MADV_HUGEPAGE);
  }
  ~AlignedBuffer() { ::operator delete[](bytes, std::align_val_t{kAlign}); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  uint8_t* bytes;
};

struct Interleaved {
  std::vector<std::unique_ptr<AlignedBuffer>> buffers;
  size_t total_bytes = 0;
  size_t released_bytes = 0;
};

// Hands the whole pages inside [data, data + bytes) back to the OS.
void release_pages(const void* data, size_t bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

bool interleavable(const TensorView& view, const RuntimeOptions& runtime) {
  return view.data != nullptr && view.layout == RowLayout::kPlain && kernels::has_interleaved_form(view.dtype) && view.shape.rank == 2 &&
         view.shape[1] % kernels::format_block_values(kernels::interleaved(view.dtype)) == 0 &&
         interleaving_enabled(view.dtype, runtime);
}

// The interleaved copy of `view` (when interleavable), its rows taken in `row_order` when one is
// given (row n of the copy = row row_order[n] of the source).
void interleave(TensorView& view, const RuntimeOptions& runtime, Interleaved& out, bool release_source,
                std::span<const int32_t> row_order = {}) {
  if (!interleavable(view, runtime)) return;
  const int64_t N = view.shape[0], K = view.shape[1];
  const size_t bytes = kernels::interleaved_bytes(view.dtype, N, K);
  auto buffer = std::make_unique<AlignedBuffer>(bytes);
  // In slabs of whole 16-row groups (each a contiguous part of both layouts), each source slab
  // released once copied: the peak holds one slab twice, not a whole LM head (272 MB in bf16).
  // Reordered rows are gathered into a slab first, and the source released at the end.
  const auto row_bytes = static_cast<int64_t>(view.bytes()) / N;
  const int64_t slab_rows = std::max<int64_t>(16, (int64_t{32} << 20) / row_bytes / 16 * 16);
  std::vector<uint8_t> gathered;
  for (int64_t n0 = 0; n0 < N; n0 += slab_rows) {
    const int64_t rows = std::min(slab_rows, N - n0);
    const uint8_t* source = static_cast<const uint8_t*>(view.data) + n0 * row_bytes;
    if (!row_order.empty()) {
      gathered.resize(static_cast<size_t>(rows * row_bytes));
      for (int64_t i = 0; i < rows; ++i)
        std::memcpy(gathered.data() + i * row_bytes,
                    static_cast<const uint8_t*>(view.data) + row_order[static_cast<size_t>(n0 + i)] * row_bytes,
                    static_cast<size_t>(row_bytes));
      source = gathered.data();
    }
    kernels::interleave_rows(view.dtype, source, rows, K, buffer->bytes + kernels::interleaved_bytes(view.dtype, n0, K));
    if (release_source && row_order.empty()) release_pages(source, static_cast<size_t>(rows * row_bytes));
  }
  if (release_source && !row_order.empty()) release_pages(view.data, view.bytes());
  if (release_source) out.released_bytes += view.bytes();
  view = TensorView{buffer->bytes, view.dtype, view.shape, RowLayout::kInterleaved16};
  out.total_bytes += bytes;
  out.buffers.push_back(std::move(buffer));
}

// A GPTQ act-order down projection reads its input in down_order (model_weights.h). Its input is
// silu(gate . x) * (up . x), one value per row of gate and up, so taking their rows in that order
// makes it come out already ordered, and down's gather goes away. Only where both are interleaved
// (the copy is made anyway); otherwise down keeps its order.
bool fold_down_order(LayerWeights& layer, const RuntimeOptions& runtime, Interleaved& out, bool release_sources) {
  // (load_model_weights checked the shapes: down_order has one entry per row of gate and up.)
  if (layer.down_order.empty() || !interleavable(layer.gate, runtime) || !interleavable(layer.up, runtime)) return false;
  interleave(layer.gate, runtime, out, release_sources, layer.down_order);
  interleave(layer.up, runtime, out, release_sources, layer.down_order);
  layer.down_order.clear();
  return true;
}

}  // namespace

bool interleaving_enabled(DType plain, const RuntimeOptions& runtime) {
  return runtime.interleave && kernels::interleave_pays(plain, runtime.isa, runtime.activations);
}

std::shared_ptr<const void> interleave_matmul_weights(ModelWeights& weights, const RuntimeOptions& runtime,
                                                      bool release_sources) {
  const auto start = std::chrono::steady_clock::now();
  auto out = std::make_shared<Interleaved>();
  int folded = 0;
  // The model's load time is mostly this (the weights' pages read in, re-laid): a unit per layer,
  // and one for the LM head.
  ProgressReporter progress("loading weights", "layers", static_cast<int64_t>(weights.layers.size()) + 1,
                            runtime.load_progress);
  for (LayerWeights& layer : weights.layers) {
    folded += fold_down_order(layer, runtime, *out, release_sources);  // gate and up are then interleaved already
    for (TensorView* w : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down})
      interleave(*w, runtime, *out, release_sources);
    for (TensorView* w : {&layer.mla.q, &layer.mla.q_a, &layer.mla.q_b, &layer.mla.kv_a, &layer.mla.kv_b, &layer.mla.o})
      interleave(*w, runtime, *out, release_sources);  // MLA (G28); null views are skipped
    // MoE experts (the stacked GGUF tensors' slices too: each expert's bytes are contiguous).
    for (ExpertWeights& e : layer.moe.experts)
      for (TensorView* w : {&e.gate, &e.up, &e.down}) interleave(*w, runtime, *out, release_sources);
    for (TensorView* w : {&layer.moe.shared.gate, &layer.moe.shared.up, &layer.moe.shared.down})
      interleave(*w, runtime, *out, release_sources);
    progress.advance();
  }
  // A tied LM head's source is the token embedding: lookups then read rows of the interleaved copy
  // (layers::read_row -> kernels::read_interleaved_row, the same values), so one copy is kept.
  const bool tied = weights.lm_head.data == weights.token_embedding.data;
  interleave(weights.lm_head, runtime, *out, release_sources);
  if (tied) weights.token_embedding = weights.lm_head;
  progress.advance();
  progress.finish();
  if (out->buffers.empty()) return nullptr;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log().info("interleaved {} Q8_0/Q4_0/Q5_0/Q4_1/Q5_1/Q2_K..Q6_K/IQ4/int8/int4/W8A8/bf16/f16 matrices ({:.1f} MiB; {:.1f} MiB of sources released) into 16-row "
             "groups in {:.0f} ms (--no-interleave keeps the file's layout){}",
             out->buffers.size(), static_cast<double>(out->total_bytes) / (1 << 20),
             static_cast<double>(out->released_bytes) / (1 << 20), ms,
             folded == 0 ? "" : fmt::format("; {} down projections' act-order input orders folded into gate/up rows", folded));
  return out;
}

}  // namespace lemma
