// Request phases in the trace: with tracing on, each finished request leaves "request" containing
// "queued", "prefill", "decode" and "finished" on its own track, tagged with its id, and the engine
// steps nest the scheduler, the forward and sampling. With tracing off nothing is recorded.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "engine_fixture.h"
#include "lemma/base/trace.h"

namespace lemma::testing {
namespace {

std::vector<trace::Event> events_of(const std::vector<trace::Event>& all, int64_t track) {
  std::vector<trace::Event> out;
  for (const auto& e : all)
    if (e.track == track && std::strcmp(e.category, "request") == 0) out.push_back(e);
  return out;
}

const trace::Event* named(const std::vector<trace::Event>& events, const char* name) {
  for (const auto& e : events)
    if (std::strcmp(e.name, name) == 0) return &e;
  return nullptr;
}

bool inside(const trace::Event& inner, const trace::Event& outer) {
  return inner.start_ns >= outer.start_ns && inner.start_ns + inner.duration_ns <= outer.start_ns + outer.duration_ns;
}

TEST(EngineTrace, EachRequestHasQueuedPrefillDecodeFinishedOnItsOwnTrack) {
  LEMMA_REQUIRE_SHARED(stories_path());
  trace::set_enabled(true);
  const size_t first = trace::thread_event_count();
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(501, prompt_of(20, 1), greedy(4));
  engine.add_request(502, prompt_of(9, 2), greedy(6));
  run_to_completion(engine);
  trace::set_enabled(false);
  const auto all = trace::thread_events_since(first);

  for (int64_t id : {501, 502}) {
    const auto ev = events_of(all, id);
    const trace::Event* request = named(ev, "request");
    ASSERT_NE(request, nullptr) << id;
    for (const char* phase : {"queued", "prefill", "decode", "finished"}) {
      const trace::Event* p = named(ev, phase);
      ASSERT_NE(p, nullptr) << id << " " << phase;
      EXPECT_TRUE(inside(*p, *request)) << id << " " << phase;
      EXPECT_STREQ(p->arg_name, "request");
      EXPECT_EQ(p->arg, id);
      EXPECT_EQ(p->tid, trace::kTrackBase + id);
    }
    // The phases follow each other.
    EXPECT_LE(named(ev, "queued")->start_ns + named(ev, "queued")->duration_ns, named(ev, "prefill")->start_ns);
    EXPECT_LE(named(ev, "prefill")->start_ns + named(ev, "prefill")->duration_ns, named(ev, "decode")->start_ns);
  }
  // Steps: schedule, forward (with layers) and sampling inside each engine_step.
  std::map<std::string, int> inside_steps;
  for (const auto& step : all) {
    if (std::strcmp(step.name, "engine_step") != 0) continue;
    for (const auto& e : all)
      if (e.track < 0 && &e != &step && inside(e, step)) ++inside_steps[e.name];
  }
  for (const char* name : {"schedule", "runner_prepare", "forward", "layer", "qkv", "attention", "lm_head", "sampling", "update"})
    EXPECT_GT(inside_steps[name], 0) << name;
}

TEST(EngineTrace, NothingIsRecordedWhileOff) {
  LEMMA_REQUIRE_SHARED(stories_path());
  trace::set_enabled(false);
  const size_t first = trace::thread_event_count();
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(7, prompt_of(5, 3), greedy(3));
  run_to_completion(engine);
  EXPECT_EQ(trace::thread_event_count(), first);
}

}  // namespace
}  // namespace lemma::testing
