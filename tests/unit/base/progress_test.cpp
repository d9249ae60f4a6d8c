// ProgressReporter and its formatting: the rate and ETA maths, the durations, and what each style
// writes, driven by an injected clock.
#include "lemma/base/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lemma {
namespace {

TEST(ProgressMaths, RateIsUnitsOverElapsedSeconds) {
  EXPECT_DOUBLE_EQ(progress_rate({10, 40, 4.0}), 2.5);
  EXPECT_DOUBLE_EQ(progress_rate({10, 40, 0.0}), 0.0);
}

TEST(ProgressMaths, EtaIsWhatIsLeftAtTheRateSoFar) {
  EXPECT_DOUBLE_EQ(*progress_eta({10, 40, 4.0}), 12.0);  // 30 left at 2.5/s
  EXPECT_DOUBLE_EQ(*progress_eta({40, 40, 4.0}), 0.0);
  EXPECT_FALSE(progress_eta({0, 40, 4.0}));   // nothing done: no rate yet
  EXPECT_FALSE(progress_eta({10, 0, 4.0}));   // unknown total
  EXPECT_FALSE(progress_eta({10, 40, 0.0}));  // no time passed
}

TEST(ProgressFormat, Durations) {
  EXPECT_EQ(format_duration(0.44), "0.4s");
  EXPECT_EQ(format_duration(12.4), "12s");
  EXPECT_EQ(format_duration(185.0), "3m05s");
  EXPECT_EQ(format_duration(3720.0), "1h02m");
  EXPECT_EQ(format_duration(-1.0), "0.0s");
}

TEST(ProgressFormat, LineWithRateEtaAndDetail) {
  EXPECT_EQ(format_progress("quantize", "tensors", {12, 24, 4.0}, "blk.3.ffn_up.weight"),
            "quantize: 12/24 tensors (50%), 3.00 tensors/s, ETA 4.0s  blk.3.ffn_up.weight");
  EXPECT_EQ(format_progress("perplexity", "chunks", {250, 1000, 10.0}), "perplexity: 250/1000 chunks (25%), 25.0 chunks/s, ETA 30s");
  EXPECT_EQ(format_progress("bench", "runs", {3, 0, 2.0}), "bench: 3 runs, 1.50 runs/s");
  EXPECT_EQ(format_progress("load", "layers", {24, 24, 2.0}), "load: 24/24 layers (100%), 12.0 layers/s, took 2.0s");
  EXPECT_EQ(format_progress("load", "layers", {0, 24, 0.0}), "load: 0/24 layers (0%)");
  EXPECT_EQ(format_progress("load", "layers", {6, 6, 0.002}), "load: 6/6 layers (100%), took 0.0s");  // too quick for a rate
  EXPECT_EQ(format_progress("x", "items", {1, 3, 1.0}), "x: 1/3 items (33%), 1.00 items/s, ETA 2.0s");  // 33.3 floors
}

struct Recorder {
  double t = 100.0;
  std::vector<std::string> writes;
  ProgressOptions options(ProgressStyle style) {
    ProgressOptions o;
    o.style = style;
    o.clock = [this] { return t; };
    o.write = [this](std::string_view s) { writes.emplace_back(s); };
    o.redraw_interval_s = 0.1;
    o.line_interval_s = 5.0;
    return o;
  }
};

TEST(ProgressReporter, TerminalRedrawsInPlaceAtMostEveryInterval) {
  Recorder r;
  ProgressReporter p("quantize", "tensors", 4, r.options(ProgressStyle::kTerminal));
  r.t += 0.0625;
  p.update(1, "a");  // within the interval: not drawn
  EXPECT_TRUE(r.writes.empty());
  r.t += 0.4375;
  p.update(2, "b");
  ASSERT_EQ(r.writes.size(), 1u);
  EXPECT_EQ(r.writes[0], "\rquantize: 2/4 tensors (50%), 4.00 tensors/s, ETA 0.5s  b\x1b[K");
  r.t += 0.5;
  p.update(4, "d");
  p.finish();
  ASSERT_EQ(r.writes.size(), 3u);
  EXPECT_EQ(r.writes[2], "\rquantize: 4/4 tensors (100%), 4.00 tensors/s, took 1.0s\x1b[K\n");
  p.finish();  // idempotent
  EXPECT_EQ(r.writes.size(), 3u);
}

TEST(ProgressReporter, LinesAreOccasionalPlainAndEndWithTheTotal) {
  Recorder r;
  {
    ProgressReporter p("perplexity", "chunks", 100, r.options(ProgressStyle::kLines));
    for (int i = 1; i <= 100; ++i) {
      r.t += 0.25;  // 25 s in all: a line at 5, 10, 15, 20 and 25 s (the last: finish adds none)
      p.update(i);
    }
  }  // the destructor finishes
  ASSERT_EQ(r.writes.size(), 5u);
  EXPECT_EQ(r.writes[0], "perplexity: 20/100 chunks (20%), 4.00 chunks/s, ETA 20s\n");
  for (const std::string& w : r.writes) {
    EXPECT_EQ(w.find('\r'), std::string::npos);
    EXPECT_EQ(w.find('\x1b'), std::string::npos);
    EXPECT_EQ(w.back(), '\n');
  }
  EXPECT_EQ(r.writes.back(), "perplexity: 100/100 chunks (100%), 4.00 chunks/s, took 25s\n");
  r.writes.clear();
  ProgressReporter quick("load", "layers", 3, r.options(ProgressStyle::kLines));
  r.t += 0.5;
  quick.update(3);
  EXPECT_TRUE(r.writes.empty());  // within the interval
  quick.finish();
  ASSERT_EQ(r.writes.size(), 1u);  // a task shorter than the interval still says how it ended
  EXPECT_EQ(r.writes[0], "load: 3/3 layers (100%), 6.00 layers/s, took 0.5s\n");
}

TEST(ProgressReporter, MessagesGoAboveTheTerminalLineWhichIsDrawnAgain) {
  Recorder r;
  ProgressReporter p("quantize", "tensors", 0, r.options(ProgressStyle::kTerminal));
  p.message("[1/2] first");  // nothing drawn yet: just the line
  p.set_total(2);
  r.t += 1.0;
  p.update(1);
  p.message("[2/2] second");
  ASSERT_EQ(r.writes.size(), 4u);
  EXPECT_EQ(r.writes[0], "[1/2] first\n");
  EXPECT_EQ(r.writes[1], "\rquantize: 1/2 tensors (50%), 1.00 tensors/s, ETA 1.0s\x1b[K");
  EXPECT_EQ(r.writes[2], "\r\x1b[K[2/2] second\n");
  EXPECT_EQ(r.writes[3], r.writes[1]);
}

TEST(ProgressReporter, MessagesArePlainLinesOffATerminal) {
  Recorder r;
  ProgressReporter lines("q", "tensors", 2, r.options(ProgressStyle::kLines));
  ProgressReporter off("q", "tensors", 2, r.options(ProgressStyle::kOff));
  lines.message("a");
  off.message("b");
  EXPECT_EQ(r.writes, (std::vector<std::string>{"a\n", "b\n"}));
}

TEST(ProgressReporter, OffWritesNothing) {
  Recorder r;
  {
    ProgressReporter p("load", "layers", 2, r.options(ProgressStyle::kOff));
    r.t += 10.0;
    p.update(1);
    p.advance();
  }
  EXPECT_TRUE(r.writes.empty());
}

}  // namespace
}  // namespace lemma
