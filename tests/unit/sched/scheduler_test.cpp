#include "lemma/sched/scheduler.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include <gtest/gtest.h>

#include <memory>
#include <spdlog/sinks/ostream_sink.h>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/spec/ngram_proposer.h"

namespace lemma {
namespace {

std::vector<int32_t> iota_tokens(int n, int start = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

Request make_request(RequestId id, int prompt_len, int64_t max_tokens, int start = 100) {
  RequestOptions o;
  o.stop.max_tokens = max_tokens;
  o.arrival_time = static_cast<double>(id);
  return Request(id, iota_tokens(prompt_len, start), o);
}

KvManagerConfig kv_config(int32_t blocks, int32_t host_blocks = 0) {
  KvManagerConfig c;
  c.num_device_blocks = blocks;
  c.block_size = 4;
  c.num_host_blocks = host_blocks;
  c.watermark = 0.0;
  return c;
}

// Samples token 1 for every request that needs one.
StepResult ones(const StepPlan& plan) {
  StepResult r;
  for (const auto& s : plan.scheduled)
    if (s.needs_sample) r.sampled.push_back({s.id, {SampleResult{1}}});
  return r;
}

TEST(Scheduler, SingleRequestPrefillsThenDecodesToMaxTokens) {
  Scheduler sched({}, kv_config(16));
  sched.add_request(make_request(1, 10, 3));
  StepPlan p = sched.schedule();
  ASSERT_EQ(p.new_requests.size(), 1u);
  EXPECT_EQ(p.new_requests[0].token_ids.size(), 10u);
  EXPECT_EQ(p.new_requests[0].block_table.size(), 3u);
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].num_new_tokens, 10);
  EXPECT_TRUE(p.scheduled[0].needs_sample);
  auto out = sched.update(p, ones(p));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].new_token_ids, std::vector<int32_t>{1});
  EXPECT_FALSE(out[0].finished());

  for (int step = 0; step < 2; ++step) {
    p = sched.schedule();
    ASSERT_EQ(p.cached_requests.size(), 1u);
    EXPECT_EQ(p.cached_requests[0].new_token_ids, std::vector<int32_t>{1});
    EXPECT_EQ(p.scheduled[0].num_new_tokens, 1);
    out = sched.update(p, ones(p));
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, RequestStatus::kFinishedLength);
  EXPECT_EQ(out[0].num_output_tokens, 3);
  EXPECT_FALSE(sched.has_unfinished_requests());
  EXPECT_EQ(sched.kv().num_free_blocks(), 16);
  p = sched.schedule();
  EXPECT_FALSE(p.has_work());
  sched.check_invariants();
}

TEST(Scheduler, ChunkedPrefillSplitsLongPromptsUnderTheBudget) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 32;
  Scheduler sched(c, kv_config(64));
  sched.add_request(make_request(1, 100, 2));
  std::vector<int64_t> grants;
  for (int i = 0; i < 4; ++i) {
    StepPlan p = sched.schedule();
    ASSERT_EQ(p.scheduled.size(), 1u);
    grants.push_back(p.scheduled[0].num_new_tokens);
    EXPECT_EQ(p.scheduled[0].needs_sample, i == 3);
    EXPECT_EQ(sched.update(p, ones(p)).size(), i == 3 ? 1u : 0u);
  }
  EXPECT_EQ(grants, (std::vector<int64_t>{32, 32, 32, 4}));
}

TEST(Scheduler, WithoutChunkingAPromptWaitsForRoomInTheBudget) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 64;
  c.enable_chunked_prefill = false;
  Scheduler sched(c, kv_config(64));
  sched.add_request(make_request(1, 40, 4));
  sched.add_request(make_request(2, 40, 4, 300));
  StepPlan p = sched.schedule();
  EXPECT_EQ(p.scheduled.size(), 1u);  // 40 + 40 > 64: the second waits whole
  sched.update(p, ones(p));
  p = sched.schedule();
  ASSERT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(p.scheduled[0].num_new_tokens, 1);
  EXPECT_EQ(p.scheduled[1].num_new_tokens, 40);
}

TEST(Scheduler, RunningDecodesGoBeforeWaitingPrefills) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 16;
  Scheduler sched(c, kv_config(64));
  sched.add_request(make_request(1, 8, 10));
  StepPlan p = sched.schedule();
  sched.update(p, ones(p));
  sched.add_request(make_request(2, 40, 10));
  p = sched.schedule();
  ASSERT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(p.scheduled[0].id, 1u);
  EXPECT_EQ(p.scheduled[0].num_new_tokens, 1);
  EXPECT_EQ(p.scheduled[1].id, 2u);
  EXPECT_EQ(p.scheduled[1].num_new_tokens, 15);
  EXPECT_EQ(p.num_batched_tokens, 16);
}

TEST(Scheduler, MaxNumSeqsCapsRunningRequests) {
  SchedulerConfig c;
  c.max_num_seqs = 2;
  Scheduler sched(c, kv_config(64));
  for (RequestId id = 1; id <= 3; ++id) sched.add_request(make_request(id, 4, 5));
  StepPlan p = sched.schedule();
  EXPECT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(sched.num_running(), 2);
  EXPECT_EQ(sched.num_waiting(), 1);
}

TEST(Scheduler, AdmissionWaitsForKvCapacityAndWatermark) {
  KvManagerConfig kv = kv_config(10);
  kv.watermark = 0.2;  // 2 blocks
  Scheduler sched({}, kv);
  sched.add_request(make_request(1, 24, 4));  // 6 blocks
  sched.add_request(make_request(2, 8, 4));   // 2 blocks: 6 + 2 leaves 2 free... ok
  sched.add_request(make_request(3, 4, 4));   // 1 block: would leave 1 < watermark
  StepPlan p = sched.schedule();
  EXPECT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(sched.num_waiting(), 1);
  EXPECT_EQ(sched.kv().num_free_blocks(), 2);
}

TEST(Scheduler, RecomputePreemptionFreesTheNewestAndRequeuesItFirst) {
  KvManagerConfig kv = kv_config(4);
  kv.enable_prefix_caching = false;  // request 2 recomputes everything
  Scheduler sched({}, kv);
  sched.add_request(make_request(1, 7, 8));  // 2 blocks, grows to 4 tokens more
  sched.add_request(make_request(2, 7, 8));
  StepPlan p = sched.schedule();
  ASSERT_EQ(p.scheduled.size(), 2u);
  sched.update(p, ones(p));  // both at 8 tokens, 7 computed; each holds 2 blocks: pool full
  p = sched.schedule();      // 1 needs a third block for position 8? no: position 7 is in block 1
  sched.update(p, ones(p));  // now 9 tokens each, 8 computed
  p = sched.schedule();      // position 8 needs block 2: request 2 (newest) is preempted
  EXPECT_EQ(p.preempted_ids, std::vector<RequestId>{2});
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].id, 1u);
  EXPECT_EQ(sched.find(2)->status(), RequestStatus::kPreempted);
  EXPECT_EQ(sched.find(2)->num_computed_tokens(), 0);
  EXPECT_EQ(sched.num_preemptions(), 1u);
  sched.check_invariants();
  sched.update(p, ones(p));
  // Request 2 comes back in full (prompt + its outputs) once request 1 is done.
  while (sched.find(1) != nullptr) {
    p = sched.schedule();
    sched.update(p, ones(p));
  }
  p = sched.schedule();
  ASSERT_EQ(p.new_requests.size(), 1u);
  EXPECT_EQ(p.new_requests[0].id, 2u);
  EXPECT_EQ(p.new_requests[0].token_ids.size(), 9u);
  EXPECT_EQ(p.scheduled[0].num_new_tokens, 9);
  EXPECT_TRUE(p.scheduled[0].needs_sample);
}

TEST(Scheduler, SwapPreemptionMovesBlocksToTheHostAndBack) {
  SchedulerConfig c;
  c.preemption_mode = PreemptionMode::kSwap;
  Scheduler sched(c, kv_config(4, 4));
  sched.add_request(make_request(1, 7, 8));
  sched.add_request(make_request(2, 7, 8));
  StepPlan p;
  for (int i = 0; i < 3; ++i) {
    p = sched.schedule();
    if (i < 2) sched.update(p, ones(p));
  }
  EXPECT_EQ(p.preempted_ids, std::vector<RequestId>{2});
  EXPECT_EQ(p.swap_out.size(), 2u);
  EXPECT_EQ(sched.find(2)->status(), RequestStatus::kSwapped);
  EXPECT_EQ(sched.find(2)->num_computed_tokens(), 8);
  EXPECT_EQ(sched.kv().num_free_host_blocks(), 2);
  EXPECT_EQ(sched.stats().num_swap_outs, 1u);
  EXPECT_EQ(sched.stats().num_swapped, 1);
  EXPECT_EQ(sched.stats().host_blocks_used, 2);
  sched.check_invariants();
  sched.update(p, ones(p));
  while (sched.find(1) != nullptr) {
    p = sched.schedule();
    sched.update(p, ones(p));
  }
  p = sched.schedule();
  EXPECT_EQ(p.swap_in.size(), 2u);
  ASSERT_EQ(p.new_requests.size(), 1u);
  EXPECT_EQ(p.new_requests[0].num_computed_tokens, 8);
  EXPECT_EQ(p.scheduled[0].num_new_tokens, 1);
  EXPECT_EQ(sched.kv().num_free_host_blocks(), 4);
  const SchedulerStats stats = sched.stats();
  EXPECT_EQ(stats.num_swap_ins, 1u);
  EXPECT_EQ(stats.num_swap_fallbacks, 0u);
  EXPECT_EQ(stats.num_preemptions, 1u);
  sched.check_invariants();
}

// Captures what lemma::log() writes while it lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) { log().sinks().push_back(sink_); }
  ~LogCapture() {
    auto& sinks = log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  int count(const std::string& needle) const {
    const std::string text = out_.str();
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// A swap preemption the host tier cannot take recomputes instead: counted, and logged once per
// occurrence with the reason.
TEST(Scheduler, SwapFallbackToRecomputeIsCountedAndLogged) {
  for (int32_t host_blocks : {0, 1}) {  // no host tier; one too small for the victim's 2 blocks
    SchedulerConfig c;
    c.preemption_mode = PreemptionMode::kSwap;
    Scheduler sched(c, kv_config(4, host_blocks));
    sched.add_request(make_request(1, 7, 8));
    sched.add_request(make_request(2, 7, 8));
    LogCapture logs;
    StepPlan p;
    for (int i = 0; i < 3; ++i) {
      p = sched.schedule();
      if (i < 2) sched.update(p, ones(p));
    }
    EXPECT_EQ(p.preempted_ids, std::vector<RequestId>{2});
    EXPECT_TRUE(p.swap_out.empty());
    EXPECT_EQ(sched.find(2)->status(), RequestStatus::kPreempted);
    EXPECT_EQ(sched.find(2)->num_computed_tokens(), 0);
    const SchedulerStats stats = sched.stats();
    EXPECT_EQ(stats.num_preemptions, 1u);
    EXPECT_EQ(stats.num_swap_fallbacks, 1u);
    EXPECT_EQ(stats.num_swap_outs, 0u);
    EXPECT_EQ(logs.count("swap preemption falls back to recompute"), 1) << "host blocks " << host_blocks;
    EXPECT_EQ(logs.count(fmt::format("the host tier has {} free of {}", host_blocks, host_blocks)), 1);
    sched.check_invariants();
  }
}

// Sliding window 6, blocks of 4, 4 steps of at most 4 tokens: a request holds at most 3 blocks (the 9
// positions a step reads or writes), so 45 tokens run in a 4-block pool. The runner learns of each
// dropped block through the request's diff (entry kNoBlock), and its view equals the KvManager's.
TEST(Scheduler, SlidingWindowDropsDeadBlocksAndTellsTheRunner) {
  SchedulerConfig c;
  c.max_num_batched_tokens = 4;
  KvManagerConfig kv = kv_config(4);
  EXPECT_THROW(Scheduler(c, kv).add_request(make_request(1, 5, 40)), InvalidArgument);  // 12 blocks > 4
  kv.sliding_window = 6;
  Scheduler sched(c, kv);
  EXPECT_EQ(sched.kv().max_live_blocks(45, 4), 3);
  sched.add_request(make_request(1, 5, 40));
  std::vector<BlockId> runner_table;
  int64_t outputs = 0, dropped_in_diffs = 0;
  while (sched.find(1) != nullptr) {
    const StepPlan p = sched.schedule();
    ASSERT_EQ(p.scheduled.size(), 1u);
    for (const auto& n : p.new_requests) runner_table = n.block_table;
    for (const auto& d : p.cached_requests) {
      runner_table.insert(runner_table.end(), d.new_block_ids.begin(), d.new_block_ids.end());
      for (const auto& r : d.replaced_blocks) {
        EXPECT_EQ(r.block, kNoBlock);
        runner_table.at(static_cast<size_t>(r.index)) = r.block;
        ++dropped_in_diffs;
      }
    }
    const auto table = sched.kv().block_table(1);
    ASSERT_EQ(runner_table, std::vector<BlockId>(table.begin(), table.end()));
    const ScheduledRequest& s = p.scheduled[0];
    // Entries before the window's first block are dropped; every block the step reads or writes is held.
    const int64_t first_block = sched.kv().first_live_position(s.num_computed_tokens) / 4;
    for (int64_t b = 0; b < static_cast<int64_t>(table.size()); ++b)
      EXPECT_EQ(table[static_cast<size_t>(b)] == kNoBlock, b < first_block) << "block " << b;
    EXPECT_LE(sched.kv().num_held_blocks(1), 3);
    sched.check_invariants();
    for (const auto& out : sched.update(p, ones(p))) outputs += static_cast<int64_t>(out.new_token_ids.size());
  }
  EXPECT_EQ(outputs, 40);
  // The last step computed token 43 from 43 computed: the blocks wholly before position 38 (0..8) went.
  EXPECT_EQ(sched.stats().num_blocks_dropped, 9u);
  EXPECT_EQ(dropped_in_diffs, 9);
  EXPECT_EQ(sched.kv().num_free_blocks(), 4);
  // A step budget whose span no longer fits the pool is refused: 6 + 16 - 1 positions span 6 blocks.
  SchedulerConfig wide = c;
  wide.max_num_batched_tokens = 16;
  EXPECT_THROW(Scheduler(wide, kv).add_request(make_request(2, 5, 40)), InvalidArgument);
}

// A choice forks off its parent while the parent still holds the blocks its last prompt token reads;
// once the window has moved past them, the choice runs as an ordinary request instead.
TEST(Scheduler, ForkAfterTheWindowMovedPastThePromptRunsAlone) {
  KvManagerConfig kv = kv_config(16);
  kv.sliding_window = 6;
  Scheduler sched({}, kv);
  sched.add_request(make_request(1, 9, 10));
  StepPlan p = sched.schedule();  // prefill 9 tokens: positions 0..8
  sched.update(p, ones(p));
  RequestOptions choice;
  choice.stop.max_tokens = 4;
  EXPECT_TRUE(sched.fork_request(1, 2, choice));  // reads from position 3, block 0
  EXPECT_EQ(sched.find(2)->status(), RequestStatus::kRunning);
  p = sched.schedule();  // drops block 0 of request 1 (position 9 reads from 4); child 2 still holds it
  EXPECT_EQ(sched.kv().block_table(1)[0], kNoBlock);
  EXPECT_NE(sched.kv().block_table(2)[0], kNoBlock);
  sched.update(p, ones(p));
  EXPECT_TRUE(sched.fork_request(1, 3, choice));
  EXPECT_EQ(sched.find(3)->status(), RequestStatus::kWaiting);
  EXPECT_FALSE(sched.kv().contains(3));
  sched.check_invariants();
  while (sched.has_unfinished_requests()) {
    p = sched.schedule();
    sched.update(p, ones(p));
  }
  EXPECT_EQ(sched.kv().num_free_blocks(), 16);
}

TEST(Scheduler, AbortFinishesOnceAndFreesBlocks) {
  Scheduler sched({}, kv_config(16));
  sched.add_request(make_request(1, 10, 5));
  sched.add_request(make_request(2, 10, 5));
  StepPlan p = sched.schedule();
  auto out = sched.abort(1);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, RequestStatus::kFinishedCancelled);
  EXPECT_FALSE(sched.abort(1));
  EXPECT_FALSE(sched.abort(99));
  EXPECT_THROW(sched.abort(2, RequestStatus::kRunning), InvalidArgument);
  // The plan made before the abort is applied without touching request 1.
  const auto outs = sched.update(p, ones(p));
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].id, 2u);
  EXPECT_EQ(sched.abort(2, RequestStatus::kFinishedTimeout)->status, RequestStatus::kFinishedTimeout);
  EXPECT_EQ(sched.kv().num_free_blocks(), 16);
  EXPECT_EQ(sched.num_finished(), 2u);
  sched.check_invariants();
}

TEST(Scheduler, RepeatedPromptHitsThePrefixCache) {
  Scheduler sched({}, kv_config(32));
  sched.add_request(make_request(1, 21, 1));
  StepPlan p = sched.schedule();
  sched.update(p, ones(p));
  sched.add_request(make_request(2, 21, 1));
  p = sched.schedule();
  ASSERT_EQ(p.new_requests.size(), 1u);
  EXPECT_EQ(p.new_requests[0].num_computed_tokens, 20);
  EXPECT_EQ(p.scheduled[0].num_new_tokens, 1);
  const auto out = sched.update(p, ones(p));
  EXPECT_EQ(out[0].num_cached_tokens, 20);
  EXPECT_GE(sched.kv().num_prefix_hits(), 1u);
  EXPECT_EQ(sched.stats().prefix_cache_queries, 2u);
  EXPECT_EQ(sched.stats().prefix_cache_hits, 1u);
  EXPECT_EQ(sched.stats().prefix_cache_hit_tokens, 20u);
  EXPECT_EQ(sched.stats().prefix_cache_queried_tokens, 42u);
  // A different namespace (adapter) does not hit.
  RequestOptions o;
  o.extra_keys = {5};
  sched.add_request(Request(3, iota_tokens(21), o));
  p = sched.schedule();
  EXPECT_EQ(p.new_requests[0].num_computed_tokens, 0);
}

TEST(Scheduler, ForkSharesPromptBlocksAndCopiesTheLastOnWrite) {
  Scheduler sched({}, kv_config(16));
  sched.add_request(make_request(1, 6, 4));  // blocks: [0..3] full, [4..5] partial
  EXPECT_FALSE(sched.fork_request(1, 2, {}));  // not admitted yet
  StepPlan p = sched.schedule();
  sched.update(p, ones(p));
  RequestOptions o;
  o.stop.max_tokens = 3;
  ASSERT_TRUE(sched.fork_request(1, 2, o));
  EXPECT_THROW(sched.fork_request(1, 2, o), InvalidArgument);
  EXPECT_EQ(sched.find(2)->num_computed_tokens(), 5);
  p = sched.schedule();
  // The parent writes position 6 into the shared partial block first: it gets the copy.
  ASSERT_EQ(p.copies.size(), 1u);
  ASSERT_EQ(p.cached_requests.size(), 1u);
  ASSERT_EQ(p.cached_requests[0].replaced_blocks.size(), 1u);
  EXPECT_EQ(p.cached_requests[0].replaced_blocks[0].index, 1);
  EXPECT_EQ(p.cached_requests[0].replaced_blocks[0].block, p.copies[0].dst);
  ASSERT_EQ(p.new_requests.size(), 1u);
  EXPECT_EQ(p.new_requests[0].id, 2u);
  EXPECT_EQ(p.new_requests[0].block_table[1], p.copies[0].src);  // the child keeps the original
  EXPECT_EQ(p.new_requests[0].block_table[0], sched.kv().block_table(1)[0]);  // full block shared
  ASSERT_EQ(p.scheduled.size(), 2u);
  EXPECT_EQ(p.scheduled[1].num_new_tokens, 1);
  EXPECT_TRUE(p.scheduled[1].needs_sample);
  sched.check_invariants();
  while (sched.has_unfinished_requests()) {
    p = sched.schedule();
    sched.update(p, ones(p));
  }
  EXPECT_EQ(sched.kv().num_free_blocks(), 16);
}

TEST(Scheduler, ExpiredDeadlinesFinishAsTimeouts) {
  Scheduler sched({}, kv_config(16));
  RequestOptions soon, later, never;
  soon.deadline = 5.0;
  later.deadline = 50.0;
  sched.add_request(Request(1, iota_tokens(4), soon));
  sched.add_request(Request(2, iota_tokens(4, 300), later));
  sched.add_request(Request(3, iota_tokens(4, 500), never));
  StepPlan p = sched.schedule();
  sched.update(p, ones(p));
  EXPECT_TRUE(sched.abort_expired(4.0).empty());
  const auto out = sched.abort_expired(10.0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, 1u);
  EXPECT_EQ(out[0].status, RequestStatus::kFinishedTimeout);
  EXPECT_EQ(sched.abort_expired(1e9).size(), 1u);  // request 3 has no deadline
  const SchedulerStats st = sched.stats();
  EXPECT_EQ(st.num_finished[finished_index(RequestStatus::kFinishedTimeout)], 2u);
  EXPECT_EQ(st.num_running, 1);
  EXPECT_EQ(st.kv_blocks_used, 1);
  EXPECT_EQ(st.kv_blocks_total, 16);
  EXPECT_EQ(st.prefix_cache_queries, 3u);
  EXPECT_EQ(st.num_steps, 1u);
  sched.check_invariants();
}

TEST(Scheduler, MissingSampleFailsTheRequest) {
  Scheduler sched({}, kv_config(16));
  sched.add_request(make_request(1, 4, 5));
  StepPlan p = sched.schedule();
  const auto out = sched.update(p, StepResult{});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, RequestStatus::kFinishedFailed);
  EXPECT_EQ(sched.kv().num_free_blocks(), 16);
}

TEST(Scheduler, RejectsRequestsThatCanNeverRun) {
  SchedulerConfig c;
  c.max_model_len = 64;
  Scheduler sched(c, kv_config(8));  // 32 tokens of KV
  EXPECT_THROW(sched.add_request(make_request(1, 0, 4)), InvalidArgument);
  EXPECT_THROW(sched.add_request(make_request(1, 4, 0)), InvalidArgument);
  EXPECT_THROW(sched.add_request(make_request(1, 64, 1)), InvalidArgument);
  EXPECT_THROW(sched.add_request(make_request(1, 30, 10)), InvalidArgument);  // 40 tokens > 32
  sched.add_request(make_request(1, 20, 10));
  EXPECT_THROW(sched.add_request(make_request(1, 4, 4)), InvalidArgument);    // duplicate id
  EXPECT_EQ(sched.num_waiting(), 1);
  SchedulerConfig bad;
  bad.enable_chunked_prefill = false;
  bad.max_num_batched_tokens = 16;
  EXPECT_THROW({ Scheduler s(bad, kv_config(8)); }, InvalidArgument);
}

TEST(Scheduler, PriorityPolicyAdmitsLowerPriorityValuesFirst) {
  SchedulerConfig c;
  c.policy = SchedulingPolicy::kPriority;
  c.max_num_seqs = 1;
  Scheduler sched(c, kv_config(16));
  RequestOptions low, high;
  low.priority = 5;
  high.priority = 1;
  high.arrival_time = 10;
  sched.add_request(Request(1, iota_tokens(4), low));
  sched.add_request(Request(2, iota_tokens(4), high));
  StepPlan p = sched.schedule();
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].id, 2u);
}

}  // namespace
}  // namespace lemma

namespace lemma {
namespace {

// A request with drafts: the samples the runner would return when it confirms `accept` of them and
// then samples `next`.
StepResult confirm(const ScheduledRequest& s, size_t accept, int32_t next) {
  SampledTokens t{s.id, {}};
  for (size_t k = 0; k < accept; ++k) t.samples.push_back(SampleResult{s.draft_token_ids[k]});
  t.samples.push_back(SampleResult{next});
  StepResult r;
  r.sampled.push_back(std::move(t));
  return r;
}

// A scheduler with n-gram drafts and one request of `prompt` (40 tokens at most, EOS ignored).
struct SpeculativeScheduler {
  spec::NgramProposer proposer;
  Scheduler scheduler;
  Scheduler& operator*() { return scheduler; }
};

std::unique_ptr<SpeculativeScheduler> speculative_scheduler(int num_tokens, spec::NgramConfig ngram,
                                                            std::vector<int32_t> prompt) {
  SchedulerConfig c;
  c.speculative.num_tokens = num_tokens;
  auto owned = std::unique_ptr<SpeculativeScheduler>(new SpeculativeScheduler{spec::NgramProposer(ngram), Scheduler(c, kv_config(64))});
  owned->scheduler.set_draft_source(&owned->proposer);
  RequestOptions o;
  o.stop.max_tokens = 40;
  o.stop.ignore_eos = true;
  owned->scheduler.add_request(Request(1, std::move(prompt), o));
  return owned;
}

TEST(SchedulerSpeculative, DraftLengthHalvesOnRejectionThenPauses) {
  auto owned = speculative_scheduler(4, {1, 3}, {5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6});
  Scheduler& sched = **owned;
  StepPlan p = sched.schedule();  // the prompt: no drafts
  ASSERT_TRUE(p.scheduled.at(0).draft_token_ids.empty());
  sched.update(p, ones(p));  // ... 5, 6, 1
  p = sched.schedule();
  ASSERT_TRUE(p.scheduled.at(0).draft_token_ids.empty());  // [6, 1] and [1] never occurred before
  sched.update(p, ones(p));  // ... 6, 1, 1: [1] occurred, followed by 1
  const auto step = [&](size_t accept, int32_t next) {
    p = sched.schedule();
    const ScheduledRequest s = p.scheduled.at(0);
    EXPECT_EQ(s.num_new_tokens, 1 + static_cast<int64_t>(s.draft_token_ids.size()));
    sched.update(p, confirm(s, std::min(accept, s.draft_token_ids.size()), next));
    sched.check_invariants();
    return s.draft_token_ids.size();
  };
  EXPECT_EQ(step(0, 7), 1u);   // only one token followed the match
  EXPECT_EQ(step(0, 5), 2u);   // ... 1, 7, 5: continue the 5, 6, 7 cycle; 4 halved to 2
  EXPECT_EQ(step(0, 6), 1u);   // halved again
  // A single refused draft pauses drafting for four decode steps, then one draft probes again.
  const int32_t cycle[] = {7, 5, 6, 7, 5, 6};
  std::vector<size_t> sizes;
  for (int32_t next : cycle) sizes.push_back(step(0, next));
  EXPECT_EQ(sizes, (std::vector<size_t>{0, 0, 0, 0, 1, 0}));
  const Request* r = sched.find(1);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->num_tokens() - r->num_computed_tokens(), 1);  // rejected drafts' slots are not computed
  const SchedulerStats stats = sched.stats();
  EXPECT_EQ(stats.num_accepted_draft_tokens, 0u);
  EXPECT_GT(stats.num_draft_tokens, 0u);
}

// Above disable_by_batch_size running requests no step drafts; at or below it they do again.
TEST(SchedulerSpeculative, NoDraftsAboveTheBatchSizeLimit) {
  spec::NgramProposer proposer({1, 2});
  SchedulerConfig c;
  c.speculative.num_tokens = 3;
  c.speculative.disable_by_batch_size = 2;
  Scheduler sched(c, kv_config(64));
  sched.set_draft_source(&proposer);
  RequestOptions o;
  o.stop.max_tokens = 40;
  o.stop.ignore_eos = true;
  for (RequestId id = 1; id <= 3; ++id) sched.add_request(Request(id, {5, 6, 5, 6, 5}, o));
  const auto drafts_of_step = [&] {
    StepPlan p = sched.schedule();
    size_t drafts = 0;
    for (const auto& s : p.scheduled) drafts += s.draft_token_ids.size();
    StepResult r;
    for (const auto& s : p.scheduled)
      if (s.needs_sample) r.sampled.push_back({s.id, {SampleResult{6}}});  // never confirms a draft of 5
    sched.update(p, std::move(r));
    return drafts;
  };
  drafts_of_step();                      // the prompts
  EXPECT_EQ(drafts_of_step(), 0u);       // three running: over the limit
  ASSERT_TRUE(sched.abort(3).has_value());
  EXPECT_GT(drafts_of_step(), 0u);       // two running: drafts again
}

TEST(SchedulerSpeculative, ConfirmedDraftsAdvanceTheComputedTokens) {
  auto owned = speculative_scheduler(3, {2, 2}, {1, 2, 3, 4, 1, 2});
  Scheduler& sched = **owned;
  StepPlan p = sched.schedule();
  StepResult first;
  first.sampled.push_back({1, {SampleResult{3}}});
  sched.update(p, first);  // 1 2 3 4 1 2 3: [2, 3] occurred, followed by 4 1 2
  p = sched.schedule();
  const ScheduledRequest s = p.scheduled.at(0);
  ASSERT_EQ(s.draft_token_ids, (std::vector<int32_t>{4, 1, 2}));
  const auto out = sched.update(p, confirm(s, 2, 9));  // 4 and 1 confirmed, then 9
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].new_token_ids, (std::vector<int32_t>{4, 1, 9}));
  const Request* r = sched.find(1);
  EXPECT_EQ(r->num_computed_tokens(), 9);  // 7 before + the 2 confirmed drafts
  EXPECT_EQ(r->num_tokens(), 10);
  EXPECT_EQ(sched.stats().num_accepted_draft_tokens, 2u);
  EXPECT_EQ(sched.stats().num_verifications_by_accepted[2], 1u);  // one verification confirmed two
  sched.check_invariants();
}

}  // namespace
}  // namespace lemma

namespace lemma {
namespace {

Request beam_request(RequestId id, int prompt_len, int64_t max_tokens) {
  RequestOptions o;
  o.stop.max_tokens = max_tokens;
  o.sampling.beam_search = BeamSearchParams{2, 1.0f, EarlyStopping::kHeuristic};
  return Request(id, iota_tokens(prompt_len), o);
}

// A beam sequence: update() computes its tokens but appends nothing (the engine chooses); it then
// parks (granted nothing) until append_tokens; fork_sequence shares every block at the current
// length; release frees them without counting a finished request.
TEST(Scheduler, BeamSequencesParkForkAppendAndRelease) {
  Scheduler sched({}, kv_config(16));
  sched.add_request(beam_request(1, 6, 4));
  StepPlan p = sched.schedule();
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_TRUE(p.scheduled[0].needs_sample);
  EXPECT_TRUE(sched.update(p, ones(p)).empty());  // no token appended, no output
  EXPECT_EQ(sched.find(1)->num_tokens(), 6);
  EXPECT_EQ(sched.find(1)->num_computed_tokens(), 6);
  EXPECT_FALSE(sched.schedule().has_work());  // parked
  sched.fork_sequence(1, 2);
  EXPECT_THROW(sched.fork_sequence(1, 2), InvalidArgument);
  EXPECT_THROW(sched.fork_sequence(7, 3), InvalidArgument);
  EXPECT_EQ(sched.find(2)->status(), RequestStatus::kRunning);
  EXPECT_EQ(sched.find(2)->num_computed_tokens(), 6);
  EXPECT_EQ(sched.kv().num_free_blocks(), 14);  // two blocks, shared
  const int32_t a = 7, b = 8;
  sched.append_tokens(1, std::span(&a, 1));
  sched.append_tokens(2, std::span(&b, 1));
  p = sched.schedule();
  ASSERT_EQ(p.scheduled.size(), 2u);
  ASSERT_EQ(p.copies.size(), 1u);  // the shared partial block is copied for the first writer
  ASSERT_EQ(p.new_requests.size(), 1u);
  EXPECT_EQ(p.new_requests[0].token_ids.back(), 8);
  sched.update(p, ones(p));
  sched.check_invariants();
  EXPECT_TRUE(sched.release(2));
  EXPECT_FALSE(sched.release(2));
  EXPECT_TRUE(sched.release(1));
  EXPECT_EQ(sched.kv().num_free_blocks(), 16);
  EXPECT_EQ(sched.num_finished(), 0u);
  EXPECT_FALSE(sched.has_unfinished_requests());
  sched.add_request(make_request(3, 4, 2));
  EXPECT_THROW(sched.append_tokens(3, std::span(&a, 1)), InvalidArgument);  // not a beam sequence
}

// Parked beam sequences never hold the queue: when a step would run nothing while requests wait,
// the newest parked one is preempted (recomputed, also in swap mode) to the back of the queue.
TEST(Scheduler, ParkedBeamSequencesMakeWayForWaitingRequests) {
  SchedulerConfig config;
  config.max_num_seqs = 2;
  config.preemption_mode = PreemptionMode::kSwap;
  Scheduler sched(config, kv_config(16, 16));
  sched.add_request(beam_request(1, 6, 4));
  sched.add_request(beam_request(2, 6, 4));
  sched.add_request(make_request(3, 5, 2));
  StepPlan p = sched.schedule();
  ASSERT_EQ(p.scheduled.size(), 2u);
  sched.update(p, ones(p));  // 1 and 2 park; 3 waits for a slot
  p = sched.schedule();
  ASSERT_EQ(p.preempted_ids, std::vector<RequestId>{2});
  EXPECT_TRUE(p.swap_out.empty());
  ASSERT_EQ(p.scheduled.size(), 1u);
  EXPECT_EQ(p.scheduled[0].id, 3u);
  EXPECT_EQ(sched.find(2)->status(), RequestStatus::kPreempted);
  EXPECT_EQ(sched.find(2)->num_computed_tokens(), 0);
  sched.check_invariants();
}

}  // namespace
}  // namespace lemma
