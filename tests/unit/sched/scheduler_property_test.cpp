// Property tests: seeded random workloads (arrivals, prompt lengths with shared prefixes, max_tokens,
// stop tokens, cancellations) on tiny KV pools, every preemption mode and policy, chunked or not, with
// or without a sliding window. After every step: the budget and max_num_seqs hold, pools and tables
// agree, no request holds more blocks than KvManager::max_live_blocks; at the end every block is free,
// every request finished exactly once, and each one's tokens equal what the simulated model produces
// for it alone, without chunking, preemption, prefix caching or dropped blocks.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "lemma/sched/scheduler.h"
#include "sim_runner.h"

namespace lemma {
namespace {

constexpr int32_t kVocab = 48;

struct Spec {
  RequestId id = 0;
  int arrival_step = 0;
  int cancel_step = -1;  // < 0: never cancelled
  RequestId fork_of = 0;  // > 0: a parallel sample of that request (arrival_step unused)
  std::vector<int32_t> prompt;
  RequestOptions options;
  uint64_t seed = 0;
};

struct Expected {
  std::vector<int32_t> outputs;
  RequestStatus status = RequestStatus::kRunning;
};

// Generation of one request on its own, token by token.
Expected reference(const Spec& s, int64_t max_model_len, int64_t window) {
  Expected e;
  std::vector<int32_t> context = s.prompt;
  while (true) {
    const int32_t t = test::sim_next_token(context, s.seed, kVocab, window);
    context.push_back(t);
    e.outputs.push_back(t);
    const auto done = check_stop(s.options.stop, e.outputs, static_cast<int64_t>(context.size()), max_model_len);
    if (done) {
      e.status = *done;
      return e;
    }
  }
}

struct Workload {
  SchedulerConfig config;
  KvManagerConfig kv;
  std::vector<Spec> specs;
};

Workload make_workload(uint64_t seed, PreemptionMode mode, bool chunked, bool prefix_caching,
                       SchedulingPolicy policy, bool window = false) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Workload w;
  w.config.max_model_len = 96;
  w.config.max_num_seqs = uniform(1, 8);
  w.config.enable_chunked_prefill = chunked;
  w.config.max_num_batched_tokens = chunked ? uniform(4, 64) : uniform(96, 160);
  w.config.long_prefill_token_threshold = uniform(0, 3) == 0 ? uniform(4, 24) : 0;
  w.config.preemption_mode = mode;
  w.config.policy = policy;
  w.kv.block_size = uniform(0, 1) == 0 ? 4 : 8;
  w.kv.num_device_blocks = 96 / w.kv.block_size + 2 + uniform(0, 24);  // a max-size request fits, few more
  w.kv.num_host_blocks = uniform(0, 2) == 0 ? 0 : uniform(4, 40);
  w.kv.watermark = uniform(0, 1) == 0 ? 0.0 : 0.05;
  w.kv.enable_prefix_caching = prefix_caching;
  w.kv.sliding_window = window ? uniform(1, 24) : 0;

  std::vector<std::vector<int32_t>> shared_prefixes;
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> p(static_cast<size_t>(uniform(4, 40)));
    for (auto& t : p) t = uniform(0, kVocab - 1);
    shared_prefixes.push_back(p);
  }
  const int num_requests = uniform(10, 40);
  for (int i = 0; i < num_requests; ++i) {
    Spec s;
    s.id = static_cast<RequestId>(1000 + i);
    s.arrival_step = uniform(0, 30);
    if (uniform(0, 1) == 0) s.prompt = shared_prefixes[static_cast<size_t>(uniform(0, 2))];
    const int suffix = uniform(s.prompt.empty() ? 1 : 0, 30);
    for (int k = 0; k < suffix; ++k) s.prompt.push_back(uniform(0, kVocab - 1));
    auto& stop = s.options.stop;
    const int64_t room = w.config.max_model_len - static_cast<int64_t>(s.prompt.size());
    stop.max_tokens = std::min<int64_t>(uniform(1, 40), room + uniform(0, 4));  // sometimes the context limit ends it
    if (uniform(0, 2) == 0) stop.eos_token_id = uniform(0, kVocab - 1);
    stop.ignore_eos = uniform(0, 3) == 0;
    if (uniform(0, 3) == 0) stop.stop_token_ids = {uniform(0, kVocab - 1), uniform(0, kVocab - 1)};
    stop.min_tokens = uniform(0, 3) == 0 ? uniform(0, 5) : 0;
    s.options.priority = uniform(0, 3);
    s.options.arrival_time = s.arrival_step + 0.001 * i;
    if (uniform(0, 7) == 0) s.options.extra_keys = {static_cast<uint64_t>(uniform(1, 2))};
    if (uniform(0, 6) == 0) s.cancel_step = s.arrival_step + uniform(0, 40);
    s.seed = rng();
    const int num_forks = uniform(0, 4) == 0 ? uniform(1, 3) : 0;
    for (int f = 0; f < num_forks; ++f) {
      Spec child = s;
      child.id = static_cast<RequestId>(5000 + 10 * i + f);
      child.fork_of = s.id;
      child.cancel_step = -1;
      child.options.stop.max_tokens = std::min<int64_t>(uniform(1, 40), room);
      child.seed = rng();
      w.specs.push_back(std::move(child));
    }
    w.specs.push_back(std::move(s));
  }
  return w;
}

struct RunStats {
  uint64_t preemptions = 0;
  uint64_t prefix_hits = 0;
  uint64_t chunked_prefills = 0;  // steps that granted part of a request's gap
  uint64_t swap_ins = 0;
  uint64_t forks = 0;
  uint64_t cow_copies = 0;
  uint64_t dropped_blocks = 0;
  int64_t slot_mismatches = 0;
  std::map<RequestId, Expected> outputs;
};

// Runs the workload to completion, asserting the per-step properties. The simulated model attends to
// the KvManager's window unless model_window >= 0 says otherwise.
RunStats run_workload(const Workload& w, bool skip_swap_in_copies = false, bool skip_cow_copies = false,
                      int64_t model_window = -1) {
  RunStats stats;
  Scheduler sched(w.config, w.kv);
  test::SimRunner runner(w.kv.num_device_blocks, w.kv.num_host_blocks, w.kv.block_size, kVocab);
  runner.skip_swap_in_copies = skip_swap_in_copies;
  runner.skip_cow_copies = skip_cow_copies;
  runner.window = model_window >= 0 ? model_window : w.kv.sliding_window;
  std::unordered_map<RequestId, uint64_t> seeds;
  std::map<RequestId, int> finish_count;
  auto record = [&](const RequestOutput& out) {
    auto& e = stats.outputs[out.id];
    e.outputs.insert(e.outputs.end(), out.new_token_ids.begin(), out.new_token_ids.end());
    if (out.finished()) {
      e.status = out.status;
      ++finish_count[out.id];
      runner.forget(out.id);  // the caller drops finished requests (plans name only preemptions)
    }
  };
  size_t num_added = 0;
  std::set<RequestId> started;
  auto start = [&](const Spec& s) {
    seeds[s.id] = s.seed;
    stats.outputs[s.id];
    started.insert(s.id);
    ++num_added;
  };
  for (int step = 0; step < 20000; ++step) {
    for (const Spec& s : w.specs) {
      if (s.fork_of != 0 && started.count(s.fork_of) != 0 && started.count(s.id) == 0) {
        if (sched.fork_request(s.fork_of, s.id, s.options)) {
          start(s);
          ++stats.forks;
        } else if (sched.find(s.fork_of) == nullptr) {  // the parent is gone: an ordinary request
          sched.add_request(Request(s.id, s.prompt, s.options));
          start(s);
        }
      }
      if (s.fork_of == 0 && s.arrival_step == step) {
        sched.add_request(Request(s.id, s.prompt, s.options));
        start(s);
      }
      if (s.cancel_step == step)
        if (auto out = sched.abort(s.id)) record(*out);
    }
    if (num_added == w.specs.size() && !sched.has_unfinished_requests()) break;
    std::set<RequestId> running_before;
    for (const auto& [id, seed] : seeds)
      if (const Request* r = sched.find(id); r != nullptr && r->status() == RequestStatus::kRunning)
        running_before.insert(id);
    const StepPlan plan = sched.schedule();
    sched.check_invariants();
    // Running requests go first; waiting ones are admitted only after every running one got tokens.
    bool admitted_any = false;
    for (const auto& s : plan.scheduled) {
      const bool was_running = running_before.count(s.id) != 0;
      EXPECT_FALSE(was_running && admitted_any) << "a running request scheduled after an admission";
      admitted_any |= !was_running;
    }
    if (admitted_any) {
      EXPECT_TRUE(plan.preempted_ids.empty());
      for (RequestId id : running_before)
        EXPECT_TRUE(std::any_of(plan.scheduled.begin(), plan.scheduled.end(), [&](const auto& s) { return s.id == id; }))
            << "request " << id << " was running but got no tokens while another was admitted";
    }
    int64_t total = 0;
    std::set<RequestId> ids;
    for (const auto& s : plan.scheduled) {
      EXPECT_GE(s.num_new_tokens, 1);
      EXPECT_TRUE(ids.insert(s.id).second) << "request scheduled twice in one step";
      total += s.num_new_tokens;
      if (!s.needs_sample) ++stats.chunked_prefills;
      const int64_t end = s.num_computed_tokens + s.num_new_tokens;
      EXPECT_LE(sched.kv().num_held_blocks(s.id), sched.kv().max_live_blocks(end, s.num_new_tokens))
          << "request " << s.id << " at " << s.num_computed_tokens << " + " << s.num_new_tokens;
    }
    EXPECT_EQ(total, plan.num_batched_tokens);
    EXPECT_LE(total, w.config.max_num_batched_tokens);
    EXPECT_LE(static_cast<int32_t>(plan.scheduled.size()), w.config.max_num_seqs);
    EXPECT_LE(sched.num_running(), w.config.max_num_seqs);
    stats.swap_ins += plan.swap_in.size();
    stats.cow_copies += plan.copies.size();
    const StepResult result = runner.run(plan, seeds);
    for (const auto& out : sched.update(plan, result)) record(out);
    sched.check_invariants();
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_FALSE(sched.has_unfinished_requests())
      << sched.num_running() << " running, " << sched.num_waiting() << " waiting, "
      << sched.kv().num_free_blocks() << " free blocks";
  EXPECT_EQ(sched.kv().num_free_blocks(), w.kv.num_device_blocks);
  EXPECT_EQ(sched.kv().num_free_host_blocks(), w.kv.num_host_blocks);
  EXPECT_EQ(sched.kv().num_sequences(), 0);
  EXPECT_EQ(runner.num_tracked(), 0u) << "a request left without a final output";
  sched.check_invariants();
  for (const Spec& s : w.specs) EXPECT_EQ(finish_count[s.id], 1) << "request " << s.id;
  stats.preemptions = sched.num_preemptions();
  stats.dropped_blocks = sched.stats().num_blocks_dropped;
  stats.prefix_hits = sched.kv().num_prefix_hits();
  stats.slot_mismatches = runner.num_slot_mismatches;
  return stats;
}

void expect_reference_outputs(const Workload& w, const RunStats& stats, uint64_t seed) {
  for (const Spec& s : w.specs) {
    const Expected want = reference(s, w.config.max_model_len, w.kv.sliding_window);
    const Expected& got = stats.outputs.at(s.id);
    if (got.status == RequestStatus::kFinishedCancelled) {
      ASSERT_LE(got.outputs.size(), want.outputs.size()) << "seed " << seed << " request " << s.id;
      EXPECT_TRUE(std::equal(got.outputs.begin(), got.outputs.end(), want.outputs.begin()))
          << "seed " << seed << " request " << s.id;
    } else {
      EXPECT_EQ(got.status, want.status) << "seed " << seed << " request " << s.id;
      EXPECT_EQ(got.outputs, want.outputs) << "seed " << seed << " request " << s.id;
    }
  }
}

struct Mode {
  PreemptionMode preemption;
  bool chunked;
  bool prefix_caching;
  SchedulingPolicy policy;
  bool window = false;  // a sliding window: dead blocks are dropped
};

class SchedulerProperty : public ::testing::TestWithParam<Mode> {};

TEST_P(SchedulerProperty, RandomWorkloadsMatchTheUnbatchedReference) {
  const Mode m = GetParam();
  RunStats total;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const Workload w = make_workload(seed * 7919 + static_cast<uint64_t>(m.preemption) * 31 + m.chunked * 17 +
                                         m.prefix_caching * 5 + static_cast<uint64_t>(m.policy),
                                     m.preemption, m.chunked, m.prefix_caching, m.policy, m.window);
    const RunStats stats = run_workload(w);
    EXPECT_EQ(stats.slot_mismatches, 0) << "seed " << seed;
    expect_reference_outputs(w, stats, seed);
    if (::testing::Test::HasFailure()) return;
    total.preemptions += stats.preemptions;
    total.prefix_hits += stats.prefix_hits;
    total.chunked_prefills += stats.chunked_prefills;
    total.swap_ins += stats.swap_ins;
    total.forks += stats.forks;
    total.cow_copies += stats.cow_copies;
    total.dropped_blocks += stats.dropped_blocks;
  }
  RecordProperty("forks", std::to_string(total.forks));
  RecordProperty("cow_copies", std::to_string(total.cow_copies));
  EXPECT_GT(total.forks, 0u);
  EXPECT_GT(total.cow_copies, 0u);
  RecordProperty("preemptions", std::to_string(total.preemptions));
  RecordProperty("prefix_hits", std::to_string(total.prefix_hits));
  RecordProperty("swap_ins", std::to_string(total.swap_ins));
  RecordProperty("chunked_prefills", std::to_string(total.chunked_prefills));
  // The workloads really exercise what they claim to.
  EXPECT_GT(total.preemptions, 0u);
  if (m.prefix_caching) {
    EXPECT_GT(total.prefix_hits, 0u);
  } else {
    EXPECT_EQ(total.prefix_hits, 0u);
  }
  if (m.chunked) {
    EXPECT_GT(total.chunked_prefills, 0u);
  }
  if (m.preemption == PreemptionMode::kSwap) {
    EXPECT_GT(total.swap_ins, 0u);
  }
  RecordProperty("dropped_blocks", std::to_string(total.dropped_blocks));
  if (m.window) {
    EXPECT_GT(total.dropped_blocks, 0u);
  } else {
    EXPECT_EQ(total.dropped_blocks, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, SchedulerProperty,
    ::testing::Values(Mode{PreemptionMode::kRecompute, true, true, SchedulingPolicy::kFcfs},
                      Mode{PreemptionMode::kRecompute, true, false, SchedulingPolicy::kFcfs},
                      Mode{PreemptionMode::kRecompute, false, true, SchedulingPolicy::kFcfs},
                      Mode{PreemptionMode::kSwap, true, true, SchedulingPolicy::kFcfs},
                      Mode{PreemptionMode::kSwap, false, false, SchedulingPolicy::kFcfs},
                      Mode{PreemptionMode::kRecompute, true, true, SchedulingPolicy::kPriority},
                      Mode{PreemptionMode::kSwap, true, true, SchedulingPolicy::kPriority},
                      Mode{PreemptionMode::kRecompute, true, true, SchedulingPolicy::kFcfs, true},
                      Mode{PreemptionMode::kSwap, true, true, SchedulingPolicy::kFcfs, true},
                      Mode{PreemptionMode::kSwap, false, true, SchedulingPolicy::kFcfs, true}),
    [](const auto& info) {
      const Mode& m = info.param;
      return std::string(m.preemption == PreemptionMode::kSwap ? "Swap" : "Recompute") +
             (m.chunked ? "Chunked" : "Whole") + (m.prefix_caching ? "Prefix" : "NoPrefix") +
             (m.policy == SchedulingPolicy::kPriority ? "Priority" : "Fcfs") + (m.window ? "Window" : "");
    });

// The property test can fail: a runner that skips the swap-in (or copy-on-write) copies reads stale
// blocks, and the outputs (or the slot check) differ from the reference.
bool detects_missing_copies(bool skip_swap_in, bool skip_cow) {
  bool detected = false;
  for (uint64_t seed = 1; seed <= 60 && !detected; ++seed) {
    const Workload w = make_workload(seed, PreemptionMode::kSwap, true, false, SchedulingPolicy::kFcfs);
    const RunStats stats = run_workload(w, skip_swap_in, skip_cow);
    if ((skip_swap_in && stats.swap_ins == 0) || (skip_cow && stats.cow_copies == 0)) continue;
    bool differs = stats.slot_mismatches > 0;
    for (const Spec& s : w.specs)
      differs |= stats.outputs.at(s.id).outputs != reference(s, w.config.max_model_len, 0).outputs;
    detected = differs;
  }
  return detected;
}

TEST(SchedulerPropertyMeta, MissingSwapCopiesAreDetected) { EXPECT_TRUE(detects_missing_copies(true, false)); }
TEST(SchedulerPropertyMeta, MissingCopyOnWriteCopiesAreDetected) { EXPECT_TRUE(detects_missing_copies(false, true)); }

// ... and a KvManager whose window is a block narrower than the model's drops blocks the model still
// reads: the runner finds dropped entries where it expects keys.
TEST(SchedulerPropertyMeta, DroppingInsideTheWindowIsDetected) {
  bool detected = false;
  for (uint64_t seed = 1; seed <= 60 && !detected; ++seed) {
    Workload w = make_workload(seed, PreemptionMode::kRecompute, true, true, SchedulingPolicy::kFcfs, true);
    const int64_t model_window = w.kv.sliding_window + w.kv.block_size;
    const RunStats stats = run_workload(w, false, false, model_window);
    detected = stats.slot_mismatches > 0;
  }
  EXPECT_TRUE(detected);
}

}  // namespace
}  // namespace lemma
