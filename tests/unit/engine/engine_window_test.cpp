// Sliding-window KV on the real engine (G38): tiny-mistral attends to the last 16 positions in every
// layer, so the engine frees each block once it lies wholly before the window. A long generation then
// holds a bounded number of blocks, and its tokens and logits are bitwise those of a run that keeps
// every block (drop_blocks_outside_window = false, a cache large enough for everything): the dropped
// blocks were never read. The model is regenerated into the build tree where tests/golden keeps it.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "golden_models.h"
#include "unit/engine/engine_fixture.h"

namespace lemma::testing {
namespace {

constexpr int32_t kBlockSize = 4;
constexpr int64_t kStepTokens = 8;  // token budget per step: prompts prefill in chunks of 8

// Loaded once per test binary; null when the generator cannot run.
const Model* mistral_model() {
  static const std::optional<Model> model = []() -> std::optional<Model> {
    std::string why;
    const auto files = ensure_preset("tiny-mistral", why);  // tests/golden's generated tiny models
    if (!files) return std::nullopt;
    return Model::open(files->gguf, LoadMode::kCopy);
  }();
  return model ? &*model : nullptr;
}

#define REQUIRE_MISTRAL()                                                                        \
  do {                                                                                           \
    if (mistral_model() == nullptr) {                                                            \
      if (running_in_ci()) FAIL() << "tiny-mistral unavailable (no /usr/bin/python3 with numpy)"; \
      GTEST_SKIP() << "tiny-mistral unavailable (no /usr/bin/python3 with numpy)";                \
    }                                                                                            \
  } while (0)

EngineConfig window_config(int32_t num_blocks, bool drop) {
  EngineConfig c = engine_config(num_blocks, kStepTokens, 4);
  c.kv.block_size = kBlockSize;
  c.drop_blocks_outside_window = drop;
  return c;
}

struct WindowRun {
  std::map<RequestId, Finished> done;
  int32_t max_blocks_used = 0;  // referenced device blocks, after each step's allocations
  SchedulerStats stats;
};

// Two long greedy generations (prompts longer than the window, outputs far longer).
WindowRun run_two(const EngineConfig& config) {
  WindowRun run;
  Engine engine(*mistral_model(), config);
  engine.add_request(1, prompt_of(20, 1), greedy(180));
  engine.add_request(2, prompt_of(23, 2), greedy(170));
  for (int i = 0; i < 5000 && engine.has_unfinished_requests(); ++i) {
    collect(engine.step(), engine, run.done);
    run.max_blocks_used = std::max(run.max_blocks_used, engine.scheduler().stats().kv_blocks_used);
    engine.scheduler().check_invariants();
  }
  EXPECT_FALSE(engine.has_unfinished_requests());
  run.stats = engine.scheduler().stats();
  EXPECT_EQ(run.stats.kv_blocks_used, 0);
  return run;
}

void expect_same_outputs(const WindowRun& reference, const WindowRun& run) {
  for (RequestId id : {1, 2}) {
    const Finished& a = reference.done.at(id);
    const Finished& b = run.done.at(id);
    ASSERT_EQ(a.tokens, b.tokens) << "request " << id;
    ASSERT_EQ(a.logits.size(), b.logits.size());
    for (size_t i = 0; i < a.logits.size(); ++i)
      ASSERT_EQ(0, std::memcmp(a.logits[i].data(), b.logits[i].data(), a.logits[i].size() * sizeof(float)))
          << "request " << id << ": logits of output " << i << " differ bitwise";
    EXPECT_EQ(b.finish_count, 1);
  }
}

int64_t model_window() {
  const auto& w = mistral_model()->config().sliding_window;
  EXPECT_FALSE(w.empty());
  return w.empty() ? 0 : *std::max_element(w.begin(), w.end());
}

// A step from c computed tokens with n new ones reads or writes positions [c - window + 1, c + n - 1]:
// window + n - 1 consecutive positions, which span at most ceil((window + n - 2) / block_size) + 1
// blocks. Everything before them is dropped.
int32_t live_blocks_per_request(int64_t window) {
  return static_cast<int32_t>((window + kStepTokens - 2 + kBlockSize - 1) / kBlockSize + 1);
}

TEST(EngineWindow, LongGenerationHoldsBoundedBlocksWithIdenticalOutputs) {
  REQUIRE_MISTRAL();
  const int64_t window = model_window();
  ASSERT_EQ(window, 16);
  const int32_t bound = 2 * live_blocks_per_request(window);  // two requests side by side
  // Reference: nothing dropped, room for both whole sequences (200 + 193 tokens).
  const WindowRun reference = run_two(window_config(128, /*drop=*/false));
  EXPECT_EQ(reference.stats.num_blocks_dropped, 0u);
  EXPECT_GT(reference.max_blocks_used, bound);  // without dropping the bound does not hold
  // Dropped: a pool of exactly the bound, which holds both requests at once (no preemption).
  const WindowRun dropped = run_two(window_config(bound, /*drop=*/true));
  EXPECT_GT(dropped.stats.num_blocks_dropped, 0u);
  EXPECT_LE(dropped.max_blocks_used, bound);
  EXPECT_EQ(dropped.stats.num_preemptions, 0u);
  expect_same_outputs(reference, dropped);
}

// Swap preemption of a request whose table has dropped entries: only held blocks move, the runner's
// table keeps the dropped prefix, and the outputs stay those of the reference.
TEST(EngineWindow, SwapPreemptionWithDroppedBlocksKeepsOutputs) {
  REQUIRE_MISTRAL();
  const int32_t per_request = live_blocks_per_request(model_window());
  const WindowRun reference = run_two(window_config(128, /*drop=*/false));
  EngineConfig c = window_config(per_request + 2, /*drop=*/true);  // too small for both at once
  c.scheduler.preemption_mode = PreemptionMode::kSwap;
  c.kv.num_host_blocks = 32;
  const WindowRun swapped = run_two(c);
  EXPECT_GT(swapped.stats.num_swap_outs, 0u);
  EXPECT_EQ(swapped.stats.num_swap_fallbacks, 0u);
  EXPECT_EQ(swapped.stats.num_swap_ins, swapped.stats.num_swap_outs);
  EXPECT_GT(swapped.stats.num_blocks_dropped, 0u);
  expect_same_outputs(reference, swapped);
}

}  // namespace
}  // namespace lemma::testing
