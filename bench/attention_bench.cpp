// attention_bench: paged attention over one layer's f32 K/V cache (qwen05b shape by default: 14
// query heads, 2 KV heads, head_dim 64, block size 16), flash kernels (layers::paged_attention)
// against the per-query scalar loop the model used before them. Prints ms per call and the K/V
// bytes read per second (decode) or GFLOP/s (prefill, 4 * causal pairs * head_dim per head), from
// the best wall-clock time, with the CPU time of that call (all threads) beside it. Cases: decode
// of one sequence at context 300/512/800/2048/8192 (300 and 800 end in a short split), decode of
// 32 sequences at 512, prefill of 512 tokens.
// With cold = 1 each flash call reads the next of a ring of caches (as a decode step reads each
// layer's) that together exceed the last-level cache, so K/V come from DRAM, and the scalar loop
// is skipped. kv_dtype (f32, bf16, int8, fp8) is the cache's element type; the scalar loop reads
// f32 caches only, so for the others it is skipped too.
// Usage: attention_bench [threads=2] [repetitions=20] [cold=0] [kv_dtype=f32]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lemma/kernels/isa.h"
#include "lemma/model/kv_cache.h"
#include "lemma/model/layers/paged_attention.h"
#include "lemma/model/thread_team.h"

namespace {

using lemma::KvCache;
using lemma::KvLayerView;
using lemma::ThreadTeam;
using lemma::layers::AttentionSequence;

constexpr int64_t kHeads = 14, kKvHeads = 2, kHeadDim = 64, kBlockSize = 16;

// The model's attention before flash attention: per query and head, all scores into `scratch`,
// softmax, weighted sum of V; heads split over the team.
void scalar_attention(std::span<const float> q, const KvLayerView& cache, const AttentionSequence& seq, float scale,
                      std::vector<float>& scratch, std::span<float> out, ThreadTeam& team) {
  const int64_t hd = cache.head_dim, group = kHeads / cache.num_kv_heads;
  team.parallel_for(kHeads, 1, [&](int64_t h0, int64_t h1) {
    float* sc = scratch.data() + h0 * seq.context_length;
    const int64_t first_pos = seq.context_length - seq.num_tokens;
    for (int64_t i = 0; i < seq.num_tokens; ++i) {
      const int64_t pos = first_pos + i;
      for (int64_t h = h0; h < h1; ++h) {
        const float* qv = q.data() + (i * kHeads + h) * hd;
        float max_score = -INFINITY;
        for (int64_t j = 0; j <= pos; ++j) {
          const float* kv = static_cast<const float*>(cache.keys) + cache.slot_offset(seq.block_table, j) + h / group * hd;
          float s = 0.0f;
          for (int64_t d = 0; d < hd; ++d) s += qv[d] * kv[d];
          sc[j] = s * scale;
          max_score = std::max(max_score, sc[j]);
        }
        float denom = 0.0f;
        for (int64_t j = 0; j <= pos; ++j) denom += (sc[j] = std::exp(sc[j] - max_score));
        float* o = out.data() + (i * kHeads + h) * hd;
        std::fill(o, o + hd, 0.0f);
        for (int64_t j = 0; j <= pos; ++j) {
          const float w = sc[j] / denom;
          const float* vv = static_cast<const float*>(cache.values) + cache.slot_offset(seq.block_table, j) + h / group * hd;
          for (int64_t d = 0; d < hd; ++d) o[d] += w * vv[d];
        }
      }
    }
  });
}

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// Best wall-clock ms over `reps` calls after a warm-up; `cpu_ms` gets the CPU ms (all threads) of
// that call, which stays meaningful when other processes share the cores.
double best_ms(int reps, const std::function<void()>& fn, double* cpu_ms = nullptr) {
  fn();  // warm-up
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double cpu0 = process_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms < best && cpu_ms != nullptr) *cpu_ms = process_cpu_ms() - cpu0;
    best = std::min(best, ms);
  }
  return best;
}

constexpr int64_t kColdBytes = int64_t{256} << 20;  // the ring of caches for cold calls

// `batch` sequences of `context` keys each (own shuffled blocks), `num_tokens` new tokens each.
void run_case(const char* name, int64_t context, int64_t num_tokens, int64_t batch, int threads, int reps, bool cold,
              lemma::KvDtype dtype) {
  const int64_t blocks_per_seq = (context + kBlockSize - 1) / kBlockSize, blocks = blocks_per_seq * batch;
  const int64_t layer_bytes = blocks * kBlockSize * static_cast<int64_t>(KvCache::kv_cache_bytes_per_token(1, kKvHeads, kHeadDim, dtype));
  const int64_t layers = cold ? std::max<int64_t>(2, kColdBytes / layer_bytes) : 1;
  KvCache cache(layers, blocks, kBlockSize, kKvHeads, kHeadDim, dtype);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(kKvHeads * kHeadDim)), v(k.size());
  for (int64_t l = 0; l < layers; ++l) {
    KvLayerView layer = cache.layer(l);
    for (int64_t slot = 0; slot < blocks * kBlockSize; ++slot) {
      for (size_t i = 0; i < k.size(); ++i) k[i] = normal(rng), v[i] = normal(rng);
      lemma::write_kv_slot(layer, slot, k.data(), v.data());
    }
  }
  KvLayerView view = cache.layer(0);
  std::vector<int32_t> ids = lemma::contiguous_block_table(blocks * kBlockSize, kBlockSize);
  std::shuffle(ids.begin(), ids.end(), rng);  // paged, not contiguous
  std::vector<AttentionSequence> seqs;
  for (int64_t b = 0; b < batch; ++b)
    seqs.push_back({b * num_tokens, num_tokens, context,
                    std::span<const int32_t>(ids).subspan(static_cast<size_t>(b * blocks_per_seq))});
  const int64_t row_floats = kHeads * kHeadDim;
  std::vector<float> q(static_cast<size_t>(batch * num_tokens * row_floats));
  for (float& x : q) x = normal(rng);
  const lemma::layers::AttentionParams params{kHeads, 1.0f / std::sqrt(float(kHeadDim)), 0};
  std::vector<float> out(q.size()), old_out(q.size());
  const int64_t scratch_floats = lemma::layers::paged_attention_scratch_floats(seqs, params, kHeadDim);
  std::vector<float> scratch(static_cast<size_t>(scratch_floats));
  std::vector<float> old_scratch(static_cast<size_t>(kHeads * context));
  ThreadTeam team(threads);
  std::vector<lemma::kernels::KernelScratch> kernel_scratch(static_cast<size_t>(team.size()));  // per thread, as a forward's

  double flash_cpu = 0.0, old_cpu = 0.0;
  int64_t next_layer = 0;
  const double flash = best_ms(reps, [&] {
    lemma::layers::paged_attention(q, cache.layer(next_layer), seqs, params, scratch, out, &team,
                                   lemma::kernels::detected_isa(), kernel_scratch);
    next_layer = (next_layer + 1) % layers;
  }, &flash_cpu);
  const double kv_gb =
      double(batch * context) * double(KvCache::kv_cache_bytes_per_token(1, kKvHeads, kHeadDim, dtype)) / 1e9;
  const double pairs = double(num_tokens) * double(context) - double(num_tokens) * double(num_tokens - 1) / 2.0;
  const double gflop = 4.0 * pairs * kHeadDim * kHeads * double(batch) / 1e9;
  if (cold || dtype != lemma::KvDtype::kF32) {
    std::printf("%-12s ctx %5lld  flash %8.3f ms (%5.1f GB/s K/V, %5.1f GFLOP/s)%s\n", name,
                static_cast<long long>(context), flash, kv_gb / (flash / 1e3), gflop / (flash / 1e3),
                cold ? (", ring of " + std::to_string(layers) + " layers").c_str() : "");
    return;
  }
  const double old = best_ms(reps, [&] {
    for (const AttentionSequence& s : seqs) {
      const auto rows = static_cast<size_t>(s.token_offset * row_floats);
      const AttentionSequence alone{0, s.num_tokens, s.context_length, s.block_table};
      scalar_attention(std::span<const float>(q).subspan(rows), view, alone, params.scale, old_scratch,
                       std::span(old_out).subspan(rows), team);
    }
  }, &old_cpu);
  // Warm runs have one layer, so `out` is layer 0's result, as `old_out` is.
  double max_diff = 0.0;
  for (size_t i = 0; i < out.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(out[i] - old_out[i])));

  std::printf("%-12s ctx %5lld  flash %8.3f ms (cpu %8.3f; %5.1f GB/s K/V, %5.1f GFLOP/s)  scalar %8.3f ms "
              "(cpu %8.3f)  speed-up %4.1fx  max|diff| %.1e\n",
              name, static_cast<long long>(context), flash, flash_cpu, kv_gb / (flash / 1e3), gflop / (flash / 1e3),
              old, old_cpu, old / flash, max_diff);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  const bool cold = argc > 3 && std::atoi(argv[3]) != 0;
  const std::optional<lemma::KvDtype> parsed = lemma::kernels::parse_kv_dtype(argc > 4 ? argv[4] : "f32");
  if (!parsed) {
    std::fprintf(stderr, "attention_bench: unknown kv dtype '%s' (f32, bf16, int8, fp8)\n", argv[4]);
    return 2;
  }
  const lemma::KvDtype dtype = *parsed;
  std::printf("attention_bench: isa %s, %s K/V, %d threads, heads %lld/%lld, head_dim %lld, block %lld, best of %d%s\n",
              std::string(lemma::kernels::isa_name(lemma::kernels::detected_isa())).c_str(),
              lemma::kernels::kv_dtype_name(dtype), threads,
              static_cast<long long>(kHeads), static_cast<long long>(kKvHeads), static_cast<long long>(kHeadDim),
              static_cast<long long>(kBlockSize), reps, cold ? ", cold (K/V from DRAM)" : "");
  for (int64_t ctx : {300, 512, 800, 2048, 8192}) run_case("decode", ctx, 1, 1, threads, reps, cold, dtype);
  run_case("decode x32", 512, 1, 32, threads, reps, cold, dtype);
  run_case("prefill 512", 512, 512, 1, threads, std::max(1, reps / 4), cold, dtype);
  return 0;
}
