// ProgressReporter: how far one long task is (done of total units: layers, tensors, chunks), with
// its rate and ETA, on stderr: one line rewritten in place (\r) on a terminal, or a plain line now
// and then (and at the end) when stderr is a file or a pipe. The caller (the CLI, from isatty)
// picks the style and passes it down; nothing here looks at the terminal or the environment.
// Time comes from an injectable clock. One thread updates a reporter: not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace lemma {

enum class ProgressStyle {
  kOff,       // nothing is written
  kTerminal,  // one line, redrawn in place with \r, ended with a newline by finish()
  kLines,     // plain lines: at most one every line_interval_s, and a last one at finish()
};

struct ProgressOptions {
  ProgressStyle style = ProgressStyle::kOff;
  std::function<double()> clock = {};                // seconds, monotonic; default: steady_clock
  std::function<void(std::string_view)> write = {};  // default: stderr, flushed
  double redraw_interval_s = 0.1;                    // kTerminal: redraw at most this often
  double line_interval_s = 5.0;                      // kLines: a line at most this often
};

struct ProgressSnapshot {
  int64_t done = 0;
  int64_t total = 0;        // 0: unknown (no percentage, no ETA)
  double elapsed_s = 0.0;   // since the reporter started
};

// Units per second since the start; 0 before any time has passed.
double progress_rate(const ProgressSnapshot& s);
// Seconds left at the rate so far; nullopt while it cannot be told (no total, nothing done yet).
std::optional<double> progress_eta(const ProgressSnapshot& s);
// "0.4s", "12s", "3m05s", "1h02m".
std::string format_duration(double seconds);
// "quantize: 12/24 tensors (50%), 3.20 tensors/s, ETA 4s  blk.3.ffn_up.weight"; once done == total
// (or `finished`) the ETA becomes "took <duration>". No rate before 0.05 s have passed.
std::string format_progress(std::string_view label, std::string_view unit, const ProgressSnapshot& s,
                            std::string_view detail = {}, bool finished = false);

class ProgressReporter {
 public:
  ProgressReporter(std::string label, std::string unit, int64_t total, ProgressOptions options = {});
  ~ProgressReporter();  // finish()
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // `done` units of `total` so far; `detail` names the current item (a tensor, a phase).
  void update(int64_t done, std::string_view detail = {});
  void advance(int64_t units = 1, std::string_view detail = {}) { update(done_ + units, detail); }
  // The total once it is known (0: unknown).
  void set_total(int64_t total) { total_ = total; }
  // A line of the task's own report (e.g. one per tensor) on the same stream, written whatever the
  // style: on a terminal it goes above the progress line, which is then drawn again.
  void message(std::string_view line);
  // Writes the final state (a terminal's line then ends with a newline). Later calls do nothing.
  void finish();

 private:
  void write_line(bool finished);
  void write(const std::string& text) const;
  double now() const;

  std::string label_, unit_, detail_;
  int64_t total_ = 0, done_ = 0, written_done_ = -1;
  ProgressOptions options_;
  double start_ = 0.0, last_write_ = 0.0;
  bool finished_ = false, drawn_ = false;  // drawn_: a terminal line is on screen
};

}  // namespace lemma
