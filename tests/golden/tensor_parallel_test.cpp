// Tensor parallelism (G7) in one process: TP=2 and TP=4 ranks on threads (dist::ThreadCommunicator),
// each opening the file itself and keeping only its slices, give the single-rank logits within
// golden/README.md's f32 tolerance (all 200 positions of len200, argmax equal), the same 32 greedy
// tokens (a prefill, then decode steps over the head-sharded KV cache), the same logits on every
// rank, and each rank holds about 1/T of the model's matrix bytes (exactly, but for KV heads
// replicated when T > num_kv_heads). On the tiny presets (GGUF and HF), stories260K, and a Q8_0
// GGUF (o_proj/down input slices in whole blocks); refusals for Q4_K slices that would split a block
// and for MoE models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "golden_models.h"
#include "lemma/base/error.h"
#include "lemma/dist/thread_communicator.h"
#include "lemma/model/greedy_generate.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

struct RankResult {
  std::vector<float> logits;
  std::vector<int32_t> greedy;
  uint64_t matrix_bytes = 0;
  uint64_t full_matrix_bytes = 0;
  uint64_t page_bytes = 0;
  int64_t num_kv_heads = 0;  // this rank's
};

RuntimeOptions rank_options(std::shared_ptr<dist::Communicator> comm) {
  RuntimeOptions rt;
  rt.pin_threads = false;  // the ranks are threads of one process: none may take another's CPU
  rt.tensor_parallel = std::move(comm);
  return rt;
}

// Every rank opens `path`, runs `tokens` (all-position logits) and a greedy continuation of `prompt`.
std::vector<RankResult> run_ranks(const std::filesystem::path& path, int size, const std::vector<int32_t>& tokens,
                                  const std::vector<int32_t>& prompt, int64_t num_new) {
  auto comms = dist::ThreadCommunicator::create_group(size, {.label = "tp"});
  std::vector<RankResult> results(static_cast<size_t>(size));
  dist::run_rank_threads(size, [&](int r) {
    const Model model = Model::open(path, LoadMode::kLazyMmap, rank_options(std::move(comms[static_cast<size_t>(r)])));
    RankResult& out = results[static_cast<size_t>(r)];
    const TensorParallelShard* tp = model.tensor_parallel();
    if (tp == nullptr) throw std::runtime_error("a TP rank's model has no shard");
    out.matrix_bytes = tp->matrix_bytes;
    out.full_matrix_bytes = tp->full_matrix_bytes;
    out.page_bytes = tp->page_bytes;
    out.num_kv_heads = model.config().num_kv_heads;
    out.logits = sequence_logits(model, tokens, 1);
    out.greedy = generate_greedy(model, prompt, num_new, std::nullopt, 1);
  });
  return results;
}

void expect_matches_single_rank(const std::filesystem::path& path, const std::vector<int32_t>& tokens,
                                const std::vector<int32_t>& prompt, int64_t num_new, int size) {
  const Model single = Model::open(path);
  const int64_t vocab = single.config().vocab_size, full_kv = single.config().num_kv_heads;
  const std::vector<float> want = sequence_logits(single, tokens, 1);
  const std::vector<int32_t> want_greedy = generate_greedy(single, prompt, num_new, std::nullopt, 1);
  const auto ranks = run_ranks(path, size, tokens, prompt, num_new);

  double max_ref = 0.0, max_diff = 0.0;
  int64_t argmax_mismatches = 0;
  const std::vector<float>& got = ranks[0].logits;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    max_ref = std::max(max_ref, std::abs(static_cast<double>(want[i])));
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  for (size_t row = 0; row < tokens.size(); ++row) {
    const auto a = std::span(want).subspan(row * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
    const auto b = std::span(got).subspan(row * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
    argmax_mismatches += std::max_element(a.begin(), a.end()) - a.begin() != std::max_element(b.begin(), b.end()) - b.begin();
  }
  EXPECT_LE(max_diff, 1e-4 * max_ref + 1e-5) << path << " TP=" << size << ": max |logit| " << max_ref;
  EXPECT_EQ(argmax_mismatches, 0);
  EXPECT_EQ(ranks[0].greedy, want_greedy);

  const uint64_t full = ranks[0].full_matrix_bytes;
  uint64_t total = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    EXPECT_EQ(0, std::memcmp(ranks[r].logits.data(), got.data(), got.size() * sizeof(float))) << "rank " << r;
    EXPECT_EQ(ranks[r].greedy, ranks[0].greedy) << "rank " << r;
    total += ranks[r].matrix_bytes;
    // The pages it reads cover what it holds, and (o_proj/down share pages across ranks) less than all.
    EXPECT_GE(ranks[r].page_bytes, ranks[r].matrix_bytes) << "rank " << r;
    EXPECT_LT(ranks[r].page_bytes, full) << "rank " << r;
    if (size <= full_kv) {  // nothing replicated: exactly a 1/T share
      EXPECT_EQ(ranks[r].matrix_bytes * static_cast<uint64_t>(size), full) << "rank " << r;
    } else {  // each rank also holds a whole KV head: more than 1/T, far less than everything
      EXPECT_EQ(ranks[r].num_kv_heads, 1);
      EXPECT_GT(ranks[r].matrix_bytes * static_cast<uint64_t>(size), full) << "rank " << r;
      EXPECT_LT(ranks[r].matrix_bytes * static_cast<uint64_t>(size), full * 3 / 2) << "rank " << r;
    }
  }
  EXPECT_GE(total, full);
  std::printf("[ tp ] %s TP=%d: max |diff| %.3g (max |logit| %.3g), %llu of %llu matrix bytes per rank (%.1f%%), "
              "%.1f%% in file pages\n",
              (path.parent_path().filename() / path.filename()).c_str(), size, max_diff, max_ref, static_cast<unsigned long long>(ranks[0].matrix_bytes),
              static_cast<unsigned long long>(full), 100.0 * static_cast<double>(ranks[0].matrix_bytes) / static_cast<double>(full),
              100.0 * static_cast<double>(ranks[0].page_bytes) / static_cast<double>(full));
}

struct Case {
  std::string preset;
  bool gguf = false;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.preset + (info.param.gguf ? "_gguf" : "_hf");
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

class TensorParallelPreset : public ::testing::TestWithParam<Case> {};

TEST_P(TensorParallelPreset, Tp2AndTp4EqualOneRank) {
  const auto json_path = shared_data("golden/models/" + GetParam().preset + ".json");
  LEMMA_REQUIRE_SHARED(json_path);
  LEMMA_REQUIRE_PRESET(files, GetParam().preset);
  const auto& golden = golden_json("models/" + GetParam().preset + ".json");
  const auto tokens = golden["sequences"][3]["tokens"].get<std::vector<int32_t>>();  // len200
  const auto prompt = golden["greedy"]["prompt"].get<std::vector<int32_t>>();
  const auto path = GetParam().gguf ? files->gguf : files->hf_dir;
  for (int size : {2, 4}) expect_matches_single_rank(path, tokens, prompt, 32, size);
}

std::vector<Case> preset_cases() {
  std::vector<Case> cases;
  for (const char* p : {"tiny", "tiny-gqa", "tiny-mqa", "tiny-qwen2", "tiny-qwen3", "tiny-tied"})
    for (bool gguf : {true, false}) cases.push_back({p, gguf});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Presets, TensorParallelPreset, ::testing::ValuesIn(preset_cases()), case_name);

TEST(TensorParallel, Stories260kTp2AndTp4EqualOneRank) {
  const auto path = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(path);
  LEMMA_REQUIRE_SHARED(shared_data("golden/stories260K_greedy.json"));
  const auto prompt = golden_json("stories260K_greedy.json")["cases"][0]["prompt_tokens"].get<std::vector<int32_t>>();
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 96; ++i) tokens.push_back((i * 37 + 1) % 512);
  for (int size : {2, 4}) expect_matches_single_rank(path, tokens, prompt, 48, size);
}

// Q8_0 o_proj and down: each rank's input columns are whole 32-value blocks (128 and 384 at TP=2,
// 64 and 192 at TP=4), copied out of every row; the int8 activations quantise the same blocks.
TEST(TensorParallel, Q8_0GgufTp2AndTp4EqualOneRank) {
  const auto path = shared_data("golden/quant/tiny-256-Q8_0.gguf");
  LEMMA_REQUIRE_SHARED(path);
  const auto& golden = golden_json("quant/tiny-256-Q8_0.json");
  const auto tokens = golden["sequences"][1]["tokens"].get<std::vector<int32_t>>();  // len64
  const auto prompt = golden["greedy"]["prompt"].get<std::vector<int32_t>>();
  for (int size : {2, 4}) expect_matches_single_rank(path, tokens, prompt, 16, size);
}

// Rank 0 drives (RuntimeOptions::tensor_parallel_leader): it alone calls sequence_logits and
// generate_greedy, each with caches of its own; the other ranks follow its forwards (Model::follow)
// until it stops them. Its results are those of every rank calling forward itself.
TEST(TensorParallel, RanksFollowingRankZeroGiveTheSameResults) {
  LEMMA_REQUIRE_PRESET(files, "tiny-gqa");
  const auto& golden = golden_json("models/tiny-gqa.json");
  const auto tokens = golden["sequences"][2]["tokens"].get<std::vector<int32_t>>();
  const auto prompt = golden["greedy"]["prompt"].get<std::vector<int32_t>>();
  const auto spmd = run_ranks(files->gguf, 4, tokens, prompt, 24);
  auto comms = dist::ThreadCommunicator::create_group(4, {.label = "tp"});
  std::vector<float> logits;
  std::vector<int32_t> greedy;
  dist::run_rank_threads(4, [&](int r) {
    RuntimeOptions rt = rank_options(std::move(comms[static_cast<size_t>(r)]));
    rt.tensor_parallel_leader = true;
    const Model model = Model::open(files->gguf, LoadMode::kLazyMmap, rt);
    if (r != 0) return model.follow(1);
    logits = sequence_logits(model, tokens, 1);
    greedy = generate_greedy(model, prompt, 24, std::nullopt, 1);
    model.stop_followers();
  });
  EXPECT_EQ(logits, spmd[0].logits);
  EXPECT_EQ(greedy, spmd[0].greedy);
}

// Kilobytes of file pages mapped into this process (touched through its mappings), from /proc.
int64_t rss_file_kb() {
  std::istringstream status(read_file("/proc/self/status"));
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("RssFile:")) return std::stoll(line.substr(8));
  return -1;
}

// The page count against the kernel's: a TP=2 rank opened alone over a lazy mmap (loading runs no
// collective) of a bf16 model with tied embeddings, whose matrices are all re-laid (so read) at load, maps about
// TensorParallelShard::page_bytes of the file (RssFile; fault-around maps up to 64 KiB more at each
// slice's edges; an untied embedding would be read in the forward only). A measurement of a large model,
// so only when LEMMA_TP_RSS_MODEL names one (docs/performance.md quotes qwen05b-shape bf16).
TEST(TensorParallel, ARankMapsThePagesItCounts) {
  const char* model_path = std::getenv("LEMMA_TP_RSS_MODEL");
  if (model_path == nullptr) GTEST_SKIP() << "set LEMMA_TP_RSS_MODEL to a bf16 GGUF with tied embeddings of 100 MB or more";
  const std::filesystem::path path = model_path;
  const double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  for (int rank = 0; rank < 2; ++rank) {
    auto comms = dist::ThreadCommunicator::create_group(2);
    const int64_t before = rss_file_kb();
    ASSERT_GE(before, 0) << "no RssFile in /proc/self/status";
    const Model model = Model::open(path, LoadMode::kLazyMmap, rank_options(std::move(comms[static_cast<size_t>(rank)])));
    const double mapped_mb = static_cast<double>(rss_file_kb() - before) * 1024.0 / 1e6;
    const TensorParallelShard& tp = *model.tensor_parallel();
    const double counted_mb = static_cast<double>(tp.page_bytes) / 1e6, held_mb = static_cast<double>(tp.matrix_bytes) / 1e6;
    std::printf("[ tp ] %s rank %d of 2: file %.0f MB, matrices held %.0f MB, pages counted %.0f MB, mapped (RssFile) %.0f MB\n",
                path.filename().c_str(), rank, file_mb, held_mb, counted_mb, mapped_mb);
    EXPECT_GT(mapped_mb, 0.9 * counted_mb) << "rank " << rank;
    EXPECT_LT(mapped_mb, 1.1 * counted_mb) << "rank " << rank;
  }
}

std::string load_error(const std::filesystem::path& path, int size) {
  auto comms = dist::ThreadCommunicator::create_group(size);
  try {
    Model::open(path, LoadMode::kLazyMmap, rank_options(std::move(comms[1])));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Q4_K rows are 256-value blocks: o_proj's 256 inputs cannot be halved without splitting one.
TEST(TensorParallel, RefusesASliceThatSplitsAQuantBlock) {
  const auto path = shared_data("golden/quant/tiny-256-Q4_K.gguf");
  LEMMA_REQUIRE_SHARED(path);
  const std::string error = load_error(path, 2);
  EXPECT_NE(error.find("blk.0.attn_output.weight"), std::string::npos) << error;
  EXPECT_NE(error.find("256-value blocks"), std::string::npos) << error;
}

TEST(TensorParallel, RefusesMoeModels) {
  LEMMA_REQUIRE_PRESET(files, "tiny-mixtral");
  const std::string error = load_error(files->gguf, 2);
  EXPECT_NE(error.find("mixture-of-experts"), std::string::npos) << error;
}

TEST(TensorParallel, RefusesHeadCountsThatDoNotDivide) {
  LEMMA_REQUIRE_PRESET(files, "tiny-gqa");  // 8 heads, 2 KV heads
  const std::string error = load_error(files->gguf, 3);
  EXPECT_NE(error.find("not a multiple of num_kv_heads 2"), std::string::npos) << error;
}

}  // namespace
}  // namespace lemma::testing
