#include "lemma/base/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace lemma {

double progress_rate(const ProgressSnapshot& s) {
  return s.elapsed_s > 0.0 ? static_cast<double>(s.done) / s.elapsed_s : 0.0;
}

std::optional<double> progress_eta(const ProgressSnapshot& s) {
  const double rate = progress_rate(s);
  if (s.total <= 0 || s.done <= 0 || rate <= 0.0) return std::nullopt;
  return static_cast<double>(std::max<int64_t>(s.total - s.done, 0)) / rate;
}

std::string format_duration(double seconds) {
  if (!(seconds >= 0.0)) seconds = 0.0;
  if (seconds < 10.0) return fmt::format("{:.1f}s", seconds);
  const auto whole = static_cast<int64_t>(std::llround(seconds));
  if (whole < 60) return fmt::format("{}s", whole);
  if (whole < 3600) return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  return fmt::format("{}h{:02}m", whole / 3600, whole % 3600 / 60);
}

namespace {
constexpr double kMinRateSeconds = 0.05;  // a rate over less time says little (a 2 ms load: 3e6 layers/s)

std::string format_rate(double rate) {
  if (rate >= 100.0) return fmt::format("{:.0f}", rate);
  if (rate >= 10.0) return fmt::format("{:.1f}", rate);
  return fmt::format("{:.2f}", rate);
}
}  // namespace

std::string format_progress(std::string_view label, std::string_view unit, const ProgressSnapshot& s,
                            std::string_view detail, bool finished) {
  std::string line = fmt::format("{}: {}", label, s.done);
  if (s.total > 0) {
    const double percent = 100.0 * static_cast<double>(s.done) / static_cast<double>(s.total);
    line += fmt::format("/{} {} ({:.0f}%)", s.total, unit, std::floor(percent));
  } else {
    line += fmt::format(" {}", unit);
  }
  if (s.elapsed_s >= kMinRateSeconds) line += fmt::format(", {} {}/s", format_rate(progress_rate(s)), unit);
  if (finished || (s.total > 0 && s.done >= s.total)) {
    line += ", took " + format_duration(s.elapsed_s);
  } else if (const auto eta = progress_eta(s)) {
    line += ", ETA " + format_duration(*eta);
  }
  if (!detail.empty()) line += fmt::format("  {}", detail);
  return line;
}

ProgressReporter::ProgressReporter(std::string label, std::string unit, int64_t total, ProgressOptions options)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), options_(std::move(options)) {
  start_ = now();
  last_write_ = start_;
}

ProgressReporter::~ProgressReporter() { finish(); }

double ProgressReporter::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void ProgressReporter::update(int64_t done, std::string_view detail) {
  if (finished_) return;
  done_ = done;
  detail_ = std::string(detail);
  if (options_.style == ProgressStyle::kOff) return;
  const double t = now();
  const double interval =
      options_.style == ProgressStyle::kTerminal ? options_.redraw_interval_s : options_.line_interval_s;
  if (t - last_write_ < interval) return;
  last_write_ = t;
  write_line(false);
}

void ProgressReporter::message(std::string_view line) {
  if (options_.style != ProgressStyle::kTerminal || !drawn_ || finished_) {
    write(std::string(line) + "\n");
    return;
  }
  write("\r\x1b[K" + std::string(line) + "\n");
  write_line(false);
}

void ProgressReporter::finish() {
  if (finished_) return;
  finished_ = true;
  if (options_.style == ProgressStyle::kOff) return;
  if (options_.style == ProgressStyle::kLines && written_done_ == done_) return;  // already said
  write_line(true);
}

void ProgressReporter::write_line(bool finished) {
  const ProgressSnapshot s{done_, total_, now() - start_};
  written_done_ = done_;
  std::string text = format_progress(label_, unit_, s, finished ? std::string_view() : detail_, finished);
  if (options_.style == ProgressStyle::kTerminal) {
    text = "\r" + text + "\x1b[K";  // erase what a longer previous line left
    if (finished) text += "\n";
    drawn_ = !finished;
  } else {
    text += "\n";
  }
  write(text);
}

void ProgressReporter::write(const std::string& text) const {
  if (options_.write) {
    options_.write(text);
  } else {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }
}

}  // namespace lemma
