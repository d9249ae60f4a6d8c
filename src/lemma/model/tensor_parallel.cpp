#include "lemma/model/tensor_parallel.h"

#include <algorithm>
#include <cstring>

#include "lemma/base/error.h"
#include "lemma/dist/communicator.h"
#include "lemma/model/layers/linear.h"

namespace lemma {

namespace {

constexpr uint64_t kPage = 4096;

// Bytes of the distinct pages under `count` ranges of `width` bytes, `stride` apart from `first`
// (a view's rows, in increasing addresses; neighbouring rows may share pages).
uint64_t pages_of_rows(const uint8_t* first, uint64_t width, uint64_t stride, int64_t count) {
  uint64_t pages = 0, counted_end = 0;  // pages below counted_end are counted
  for (int64_t r = 0; r < count; ++r) {
    const auto at = reinterpret_cast<uintptr_t>(first) + static_cast<uint64_t>(r) * stride;
    const uint64_t begin = std::max<uint64_t>(at / kPage, counted_end), end = (at + width + kPage - 1) / kPage;
    if (end > begin) pages += end - begin;
    counted_end = std::max(counted_end, end);
  }
  return pages * kPage;
}

uint64_t matrix_bytes(const TensorView& t) { return t.data == nullptr ? 0 : t.bytes(); }

uint64_t row_bytes(const TensorView& t) { return *dtype_bytes(t.dtype, static_cast<uint64_t>(t.shape[1])); }

// Rows [begin, end) of a plain [N, K] matrix: a sub-view, no copy (the rows are contiguous).
TensorView output_rows(const TensorView& t, dist::IndexRange rows) {
  TensorView v = t;
  v.data = t.bytes_ptr() + static_cast<uint64_t>(rows.begin) * row_bytes(t);
  v.shape = Shape{rows.size(), t.shape[1]};
  return v;
}

uint64_t pages_of(const TensorView& v) { return pages_of_rows(v.bytes_ptr(), v.bytes(), 0, 1); }

template <typename T>
std::vector<T> slice(const std::vector<T>& values, int64_t begin, int64_t end) {
  if (values.empty()) return {};
  return {values.begin() + begin, values.begin() + end};
}

class Sharder {
 public:
  Sharder(WeightFormat format, TensorParallelShard& shard) : format_(format), shard_(shard) {}

  // Input columns [begin, end) of every row of a plain [N, K] matrix, copied (they are strided in
  // the file). Quantized rows are whole blocks only: a slice must start and end on a block edge.
  TensorView input_columns(const TensorView& t, dist::IndexRange cols, WeightRole role, int64_t layer) {
    const DTypeInfo& info = dtype_info(t.dtype);
    const auto block = static_cast<int64_t>(info.block_elements);
    if (cols.begin % block != 0 || cols.end % block != 0)
      fail<Unsupported>("tensor parallel: tensor {} ({}, {}-value blocks): rank {}'s input columns [{}, {}) are not whole "
                        "blocks; choose a tensor-parallel size whose share of {} is a multiple of {}",
                        weight_name(format_, role, layer), info.name, block, shard_.slices.rank, cols.begin, cols.end,
                        t.shape[1], block);
    const uint64_t full = row_bytes(t);
    const uint64_t first = static_cast<uint64_t>(cols.begin / block) * info.block_bytes;
    const uint64_t width = static_cast<uint64_t>(cols.size() / block) * info.block_bytes;
    shard_.page_bytes += pages_of_rows(t.bytes_ptr() + first, width, full, t.shape[0]);
    std::vector<uint8_t>& copy = shard_.copies.emplace_back(static_cast<size_t>(width * static_cast<uint64_t>(t.shape[0])));
    for (int64_t r = 0; r < t.shape[0]; ++r)
      std::memcpy(copy.data() + static_cast<uint64_t>(r) * width, t.bytes_ptr() + static_cast<uint64_t>(r) * full + first, width);
    TensorView v = t;
    v.data = copy.data();
    v.shape = Shape{t.shape[0], cols.size()};
    return v;
  }

 private:
  WeightFormat format_;
  TensorParallelShard& shard_;
};

uint64_t sum_matrix_bytes(const ModelWeights& w) {
  uint64_t total = matrix_bytes(w.token_embedding);
  if (w.lm_head.data != w.token_embedding.data) total += matrix_bytes(w.lm_head);
  for (const LayerWeights& l : w.layers)
    for (const TensorView* t : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) total += matrix_bytes(*t);
  return total;
}

}  // namespace

ModelConfig shard_config(const ModelConfig& full, const dist::TensorParallelSlices& s) {
  ModelConfig c = full;
  c.num_heads = s.q_heads.size();
  c.num_kv_heads = s.kv_heads.size();
  c.intermediate_size = s.ffn.size();
  return c;
}

std::unique_ptr<TensorParallelShard> shard_model_weights(ModelWeights& w, const ModelConfig& c, WeightFormat format,
                                                         const dist::TensorParallelSlices& s, dist::Communicator* comm) {
  if (c.moe.enabled())
    fail<Unsupported>("tensor parallel: {} is a mixture-of-experts model; its expert layers are not sharded yet (run it "
                      "with --tensor-parallel-size 1)", c.arch);
  auto shard = std::make_unique<TensorParallelShard>();
  shard->comm = comm;
  shard->slices = s;
  shard->full_matrix_bytes = sum_matrix_bytes(w);
  Sharder sharder(format, *shard);
  const int64_t hd = c.head_dim;
  const dist::IndexRange q_rows{s.q_heads.begin * hd, s.q_heads.end * hd};
  const dist::IndexRange kv_rows{s.kv_heads.begin * hd, s.kv_heads.end * hd};
  for (size_t l = 0; l < w.layers.size(); ++l) {
    LayerWeights& lw = w.layers[l];
    const auto layer = static_cast<int64_t>(l);
    if (!lw.o_order.empty() || !lw.down_order.empty())
      fail<Unsupported>("tensor parallel: layer {}'s o_proj/down carry an act-order input order, whose permutation "
                        "crosses the ranks' input slices", layer);
    lw.q = output_rows(lw.q, q_rows);
    lw.k = output_rows(lw.k, kv_rows);
    lw.v = output_rows(lw.v, kv_rows);
    lw.q_bias = slice(lw.q_bias, q_rows.begin, q_rows.end);
    lw.k_bias = slice(lw.k_bias, kv_rows.begin, kv_rows.end);
    lw.v_bias = slice(lw.v_bias, kv_rows.begin, kv_rows.end);
    lw.o = sharder.input_columns(lw.o, q_rows, WeightRole::kO, layer);
    lw.gate = output_rows(lw.gate, s.ffn);
    lw.up = output_rows(lw.up, s.ffn);
    lw.down = sharder.input_columns(lw.down, s.ffn, WeightRole::kDown, layer);
  }
  const bool tied = w.lm_head.data == w.token_embedding.data;
  w.token_embedding = output_rows(w.token_embedding, s.vocab);
  w.lm_head = tied ? w.token_embedding : output_rows(w.lm_head, s.vocab);
  shard->matrix_bytes = sum_matrix_bytes(w);
  // The sub-views' pages (the copies' were counted as they were made).
  shard->page_bytes += pages_of(w.token_embedding) + (tied ? 0 : pages_of(w.lm_head));
  for (const LayerWeights& l : w.layers)
    for (const TensorView* t : {&l.q, &l.k, &l.v, &l.gate, &l.up}) shard->page_bytes += pages_of(*t);
  return shard;
}

void embed_tokens(const TensorView& embedding, const TensorParallelShard* tp, std::span<const int32_t> ids,
                  int64_t hidden, std::span<float> rows) {
  const auto H = static_cast<size_t>(hidden);
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::span<float> row = rows.subspan(i * H, H);
    if (tp == nullptr) {
      layers::read_row(embedding, ids[i], row);
    } else if (ids[i] >= tp->slices.vocab.begin && ids[i] < tp->slices.vocab.end) {
      layers::read_row(embedding, ids[i] - tp->slices.vocab.begin, row);
    } else {
      std::fill(row.begin(), row.end(), 0.0f);
    }
  }
}

void all_reduce_partial(const TensorParallelShard& tp, std::span<float> partial) { tp.comm->all_reduce(partial); }

int64_t local_logits_floats(const TensorParallelShard& tp, int64_t rows) { return rows * tp.slices.vocab_stride; }

void gather_logits(const TensorParallelShard& tp, std::span<const float> local, int64_t rows, int64_t vocab,
                   std::vector<float>& gathered, std::span<float> logits) {
  const int64_t block = local_logits_floats(tp, rows), stride = tp.slices.vocab_stride;
  const auto size = static_cast<size_t>(tp.slices.size);
  if (gathered.size() < size * static_cast<size_t>(block)) gathered.resize(size * static_cast<size_t>(block));
  tp.comm->all_gather(local.first(static_cast<size_t>(block)), std::span(gathered).first(size * static_cast<size_t>(block)));
  // Rank q's block holds [rows, its share] row-major; its share is stride wide but the last one's.
  for (int64_t q = 0; q < tp.slices.size; ++q) {
    const int64_t v0 = q * stride, width = std::min(vocab, v0 + stride) - v0;
    const float* src = gathered.data() + q * block;
    for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * width, width, logits.data() + r * vocab + v0);
  }
}

}  // namespace lemma
