// ModelRunner driven by hand-written StepPlans (no scheduler): prefill then decode reproduces the
// reference greedy continuation of stories260K, two requests in one forward sample what each does
// alone, a swap out to the host tier and back in continues exactly, and the plan's bookkeeping
// (preempted ids, forget, unknown requests) is honoured.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/runtime/model_runner.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

struct Case {
  std::vector<int32_t> prompt, continuation;
};

Case reference_case(size_t index) {
  const auto path = shared_data("golden/stories260K_greedy.json");
  const auto golden = nlohmann::json::parse(read_file(path));
  const auto& c = golden["cases"].at(index);
  return {c["prompt_tokens"].get<std::vector<int32_t>>(), c["continuation_tokens"].get<std::vector<int32_t>>()};
}

const Model& stories() {
  static const Model model = Model::open(shared_data("models/stories260K/stories260K.gguf"), LoadMode::kCopy);
  return model;
}

constexpr int64_t kBlockSize = 16;

SamplingParams greedy() {
  SamplingParams s;
  s.temperature = 0.0f;
  return s;
}

// Device blocks [first, first + n).
std::vector<BlockId> blocks(BlockId first, int64_t n) {
  std::vector<BlockId> b;
  for (int64_t i = 0; i < n; ++i) b.push_back(first + BlockId(i));
  return b;
}

// One request's view for the plans: its tokens, blocks and how many are computed.
struct Sequence {
  Sequence(RequestId i, std::vector<int32_t> prompt, std::vector<BlockId> blocks)
      : id(i), tokens(std::move(prompt)), table(std::move(blocks)) {}
  RequestId id;
  std::vector<int32_t> tokens;
  std::vector<BlockId> table;
  int64_t computed = 0;
  std::vector<int32_t> outputs;
};

// `s` as a request new to the runner (first admitted, or resumed with `s.computed` tokens in the cache).
NewRequestData new_request(const Sequence& s, int64_t num_prompt_tokens) {
  NewRequestData n;
  n.id = s.id;
  n.token_ids = s.tokens;
  n.num_prompt_tokens = num_prompt_tokens;
  n.num_computed_tokens = s.computed;
  n.block_table = s.table;
  n.sampling = greedy();
  return n;
}

// A plan that prefills `s` (new to the runner) in one step.
void add_prefill(StepPlan& plan, Sequence& s) {
  plan.new_requests.push_back(new_request(s, int64_t(s.tokens.size())));
  plan.scheduled.push_back({s.id, s.computed, int64_t(s.tokens.size()) - s.computed, true});
  plan.num_batched_tokens += int64_t(s.tokens.size()) - s.computed;
}

// A plan that decodes the last sampled token of `s` (one token), growing its table when needed.
void add_decode(StepPlan& plan, Sequence& s, BlockId& next_free) {
  CachedRequestData d;
  d.id = s.id;
  d.new_token_ids = {s.tokens.back()};
  d.num_computed_tokens = s.computed;
  if (int64_t(s.tokens.size()) > int64_t(s.table.size()) * kBlockSize) {
    d.new_block_ids = {next_free};
    s.table.push_back(next_free++);
  }
  plan.cached_requests.push_back(d);
  plan.scheduled.push_back({s.id, s.computed, 1, true});
  plan.num_batched_tokens += 1;
}

void take(const RunnerOutput& out, Sequence& s) {
  for (const auto& x : out.result.sampled) {
    if (x.id != s.id) continue;
    ASSERT_EQ(x.samples.size(), 1u);
    s.computed = int64_t(s.tokens.size());
    s.tokens.push_back(x.samples[0].token);
    s.outputs.push_back(x.samples[0].token);
  }
}

ModelRunnerConfig runner_config(int64_t host_blocks = 0) {
  ModelRunnerConfig c;
  c.num_device_blocks = 64;
  c.num_host_blocks = host_blocks;
  c.block_size = kBlockSize;
  c.max_num_seqs = 4;
  return c;
}

class ModelRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LEMMA_REQUIRE_SHARED(shared_data("models/stories260K/stories260K.gguf"));
    LEMMA_REQUIRE_SHARED(shared_data("golden/stories260K_greedy.json"));
  }
};

TEST_F(ModelRunnerTest, PrefillThenDecodeReproducesTheReferenceGreedyContinuation) {
  const Case c = reference_case(0);
  ModelRunner runner(stories(), runner_config());
  Sequence s{7, c.prompt, blocks(0, (int64_t(c.prompt.size()) + kBlockSize - 1) / kBlockSize)};
  BlockId next_free = BlockId(s.table.size());
  StepPlan prefill;
  add_prefill(prefill, s);
  take(runner.run(prefill), s);
  while (s.outputs.size() < c.continuation.size()) {
    StepPlan decode;
    add_decode(decode, s, next_free);
    take(runner.run(decode), s);
  }
  EXPECT_EQ(s.outputs, c.continuation);
}

TEST_F(ModelRunnerTest, TwoRequestsInOneForwardSampleWhatEachDoesAlone) {
  const Case a = reference_case(0), b = reference_case(1);
  ModelRunner runner(stories(), runner_config());
  Sequence sa{1, a.prompt, blocks(0, 4)}, sb{2, b.prompt, blocks(4, 4)};
  BlockId next_free = 8;
  StepPlan prefill;
  add_prefill(prefill, sa);
  add_prefill(prefill, sb);
  const RunnerOutput first = runner.run(prefill);
  EXPECT_EQ(first.num_sequences, 2);
  take(first, sa);
  take(first, sb);
  for (int step = 0; step < 20; ++step) {
    StepPlan decode;
    add_decode(decode, sa, next_free);
    add_decode(decode, sb, next_free);
    const RunnerOutput out = runner.run(decode);
    take(out, sa);
    take(out, sb);
  }
  EXPECT_EQ(sa.outputs, std::vector<int32_t>(a.continuation.begin(), a.continuation.begin() + 21));
  EXPECT_EQ(sb.outputs, std::vector<int32_t>(b.continuation.begin(), b.continuation.begin() + 21));
}

TEST_F(ModelRunnerTest, SwapOutAndBackInContinuesExactly) {
  const Case c = reference_case(0);
  ModelRunner runner(stories(), runner_config(/*host_blocks=*/8));
  Sequence s{3, c.prompt, blocks(0, 2)};
  BlockId next_free = 2;
  StepPlan prefill;
  add_prefill(prefill, s);
  take(runner.run(prefill), s);
  for (int step = 0; step < 12; ++step) {
    StepPlan decode;
    add_decode(decode, s, next_free);
    take(runner.run(decode), s);
  }
  // Swap out: the device blocks go to host blocks 0.., the runner drops the request.
  StepPlan out;
  for (size_t i = 0; i < s.table.size(); ++i) out.swap_out.push_back({s.table[i], BlockId(i)});
  out.preempted_ids = {s.id};
  runner.run(out);
  EXPECT_EQ(runner.num_tracked(), 0u);
  // Swap in to other device blocks; the request returns as new with its K/V computed but the last token.
  StepPlan in;
  std::vector<BlockId> fresh = blocks(32, int64_t(s.table.size()));
  for (size_t i = 0; i < fresh.size(); ++i) in.swap_in.push_back({BlockId(i), fresh[i]});
  s.table = fresh;
  next_free = 32 + BlockId(fresh.size());
  in.new_requests.push_back(new_request(s, int64_t(c.prompt.size())));
  in.scheduled.push_back({s.id, s.computed, 1, true});
  in.num_batched_tokens = 1;
  take(runner.run(in), s);
  while (s.outputs.size() < 30) {
    StepPlan decode;
    add_decode(decode, s, next_free);
    take(runner.run(decode), s);
  }
  EXPECT_EQ(s.outputs, std::vector<int32_t>(c.continuation.begin(), c.continuation.begin() + 30));
}

TEST_F(ModelRunnerTest, PlanBookkeepingIsHonoured) {
  const Case c = reference_case(0);
  ModelRunner runner(stories(), runner_config());
  Sequence s{5, c.prompt, blocks(0, 1)};
  StepPlan prefill;
  add_prefill(prefill, s);
  runner.run(prefill);
  EXPECT_EQ(runner.num_tracked(), 1u);
  StepPlan unknown;
  CachedRequestData d;
  d.id = 99;
  unknown.cached_requests.push_back(d);
  EXPECT_THROW(runner.run(unknown), InvalidArgument);
  StepPlan swap_without_host;
  swap_without_host.swap_out.push_back({0, 0});
  EXPECT_THROW(runner.run(swap_without_host), InvalidArgument);
  runner.forget(s.id);
  EXPECT_EQ(runner.num_tracked(), 0u);
  runner.forget(s.id);  // idempotent
  EXPECT_THROW(ModelRunner(stories(), ModelRunnerConfig{}), InvalidArgument);
}

}  // namespace
}  // namespace lemma::testing
