// trace: ranges recorded per thread and written as Trace Event Format JSON that parses, nests per
// thread and gives each thread its own tid; nothing is recorded while tracing is off.
#include "lemma/base/trace.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "support/trace_json_check.h"

namespace lemma::testing {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

size_t count_named(const std::vector<trace::Event>& events, const std::string& name) {
  return static_cast<size_t>(std::count_if(events.begin(), events.end(), [&](const trace::Event& e) { return name == e.name; }));
}

TEST(Trace, RecordsNothingWhileOff) {
  trace::set_enabled(false);
  const size_t before = trace::thread_event_count();
  {
    trace::Scope a("off_outer");
    trace::Scope b("off_inner");
  }
  EXPECT_EQ(trace::thread_event_count(), before);
  EXPECT_EQ(count_named(trace::snapshot(), "off_outer"), 0u);
}

TEST(Trace, WritesNestedRangesWithOneTidPerThread) {
  trace::set_enabled(true);
  trace::name_this_thread("test main");
  {
    trace::Scope step("t_step", "step", "step", 7);
    for (int layer = 0; layer < 3; ++layer) {
      trace::Scope l("t_layer", "layer", "layer", layer);
      trace::Scope k("t_kernel");
    }
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w)
      workers.emplace_back([w] {
        trace::name_this_thread("test worker");
        trace::Scope outer("t_worker", "worker", "worker", w);
        trace::Scope inner("t_tile");
      });
    for (auto& t : workers) t.join();
  }
  trace::set_enabled(false);
  const auto path = std::filesystem::temp_directory_path() / ("lemma_trace_test_" + std::to_string(::getpid()) + ".json");
  trace::write_json(path);
  const nlohmann::json trace = read_json(path);
  std::filesystem::remove(path);

  std::string why;
  const auto ranges = trace_ranges(trace, why);
  ASSERT_TRUE(why.empty()) << why;
  EXPECT_EQ(nesting_error(ranges), "");
  std::set<int64_t> main_tids, worker_tids;
  int layers = 0;
  for (const auto& r : ranges) {
    if (r.name == "t_step") {
      main_tids.insert(r.tid);
      EXPECT_EQ(r.args["step"], 7);
    }
    if (r.name == "t_layer") {
      ++layers;
      EXPECT_EQ(parent_name(ranges, r), "t_step");
    }
    if (r.name == "t_kernel") {
      EXPECT_EQ(parent_name(ranges, r), "t_layer");
    }
    if (r.name == "t_tile") {
      EXPECT_EQ(parent_name(ranges, r), "t_worker");
    }
    if (r.name == "t_worker") worker_tids.insert(r.tid);
  }
  EXPECT_EQ(layers, 3);
  ASSERT_EQ(main_tids.size(), 1u);
  EXPECT_EQ(worker_tids.size(), 2u) << "each worker thread has its own tid";
  EXPECT_FALSE(worker_tids.contains(*main_tids.begin()));
  bool named = false;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "test worker") named = true;
  EXPECT_TRUE(named);
}

TEST(Trace, EndClosesARangeEarlyAndOnce) {
  trace::set_enabled(true);
  const size_t before = trace::thread_event_count();
  {
    trace::Scope s("t_ended");
    s.end();
    s.end();
  }
  trace::set_enabled(false);
  const auto events = trace::thread_events_since(before);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(events[0].name, "t_ended");
}

TEST(Trace, UnwritablePathIsAnIoError) {
  EXPECT_THROW(trace::write_json("/nonexistent-dir/x/trace.json"), IoError);
}

}  // namespace
}  // namespace lemma::testing
