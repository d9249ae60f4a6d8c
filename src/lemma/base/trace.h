// Tracing (G5's profiler): named time ranges recorded into per-thread buffers and written as a
// Chrome / Perfetto trace (Trace Event Format JSON, "X" complete events, ts/dur in µs).
// Off by default: a range then costs one relaxed atomic load. On: two steady-clock reads and a
// store into the calling thread's own buffer (no lock; a thread's first event registers its
// buffer under a mutex, and a buffer grows by whole chunks of kChunkEvents, so a warmed-up
// thread records without allocating). Names and categories must be string literals (stored as
// pointers). Buffers outlive their threads; write_json() may run while threads record (it reads
// only committed events). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lemma::trace {

namespace detail {
extern std::atomic<bool> g_enabled;
}

// One relaxed load: whether ranges record now.
inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

// Starts or stops recording (events already recorded are kept).
void set_enabled(bool on);

// Nanoseconds on the steady clock (the trace's time base).
uint64_t now_ns();

// A finished range. `arg_name`/`arg` are one optional integer argument (e.g. "layer", 3).
struct Event {
  const char* name = nullptr;
  const char* category = nullptr;
  const char* arg_name = nullptr;  // null: no argument
  int64_t arg = 0;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  int64_t tid = 0;    // the recording thread's id, or kTrackBase + track for record_on_track()
  int64_t track = -1;  // >= 0: a logical track (one row per request in Perfetto)
};

// Track ids are written as tid kTrackBase + track: above any Linux thread id (pid_max <= 2^22)
// and still a 32-bit integer, which trace viewers expect.
inline constexpr int64_t kTrackBase = 1'000'000'000;

// Records a range [start_ns, end_ns) on the calling thread.
void record(const char* name, const char* category, uint64_t start_ns, uint64_t end_ns, const char* arg_name = nullptr,
            int64_t arg = 0);

// Records a range on logical track `track` >= 0 (e.g. a request id) rather than on the calling
// thread: phases of one request that span many engine steps get their own row. The first range
// recorded for a track names it "<track_label> <track>" (track_label: a literal).
void record_on_track(int64_t track, const char* track_label, const char* name, const char* category, uint64_t start_ns,
                     uint64_t end_ns, const char* arg_name = nullptr, int64_t arg = 0);

// Allocates the calling thread's buffer space for `events` more events now, so that recording
// them later allocates nothing (e.g. before a traced benchmark run).
void reserve_this_thread(size_t events);

// Names the calling thread in the trace (a "thread_name" metadata event). `name` must outlive the trace.
void name_this_thread(const char* name);

// A range from construction to end() or destruction; records nothing when tracing was off at
// construction. Not copyable.
class Scope {
 public:
  explicit Scope(const char* name, const char* category = "kernel", const char* arg_name = nullptr, int64_t arg = 0)
      : name_(name), category_(category), arg_name_(arg_name), arg_(arg), start_ns_(enabled() ? now_ns() : 0) {}
  ~Scope() { end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // Ends the range now (idempotent).
  void end() {
    if (start_ns_ != 0) record(name_, category_, start_ns_, now_ns(), arg_name_, arg_);
    start_ns_ = 0;
  }

 private:
  const char* name_;
  const char* category_;
  const char* arg_name_;
  int64_t arg_;
  uint64_t start_ns_;
};

// Every committed event of every thread, per thread in recording order (tests, bench figures).
std::vector<Event> snapshot();
// Events recorded on the calling thread since `from` (its own count, see thread_event_count()).
std::vector<Event> thread_events_since(size_t from);
size_t thread_event_count();

// Writes every committed event as {"traceEvents": [...], "displayTimeUnit": "ms"}; throws IoError.
void write_json(const std::filesystem::path& path);

// For a program's lifetime: enables tracing, and writes the file when destroyed (end of main,
// errors included). Logs (does not throw) when writing fails.
class FileSession {
 public:
  explicit FileSession(std::filesystem::path path);
  ~FileSession();
  FileSession(const FileSession&) = delete;
  FileSession& operator=(const FileSession&) = delete;

 private:
  std::filesystem::path path_;
};

}  // namespace lemma::trace
