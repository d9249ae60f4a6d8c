#include "lemma/base/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"

namespace lemma::trace {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {

constexpr size_t kChunkEvents = 8192;
constexpr size_t kMaxChunks = 2048;  // 16M events per thread; later ones are counted as dropped

// One thread's events: chunks appended by their owner only; `count` is published with release
// so a reader that loads it with acquire sees every event below it.
struct ThreadBuffer {
  int32_t tid = 0;
  std::atomic<const char*> name{nullptr};
  std::array<std::atomic<Event*>, kMaxChunks> chunks{};
  std::atomic<size_t> count{0};
  std::atomic<size_t> dropped{0};

  ~ThreadBuffer() {
    for (auto& c : chunks) delete[] c.load();
  }
};

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  std::atomic<uint64_t> origin_ns{0};
};

// Never destroyed: threads may record during static destruction.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

thread_local ThreadBuffer* t_buffer = nullptr;

ThreadBuffer& this_thread_buffer() {
  if (t_buffer == nullptr) {
    auto buffer = std::make_unique<ThreadBuffer>();
    buffer->tid = static_cast<int32_t>(::syscall(SYS_gettid));
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    t_buffer = buffer.get();
    r.buffers.push_back(std::move(buffer));
  }
  return *t_buffer;
}

void append_events(const ThreadBuffer& b, size_t from, std::vector<Event>& out) {
  const size_t n = b.count.load(std::memory_order_acquire);
  for (size_t i = from; i < n; ++i) {
    Event e = b.chunks[i / kChunkEvents].load(std::memory_order_acquire)[i % kChunkEvents];
    e.tid = e.track >= 0 ? kTrackBase + e.track : b.tid;
    out.push_back(e);
  }
}

// JSON string contents (names are literals from this code base, but quote them properly anyway).
std::string escaped(const char* s) {
  std::string out;
  for (; *s != '\0'; ++s) {
    const char c = *s;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", c);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

// Nanoseconds as microseconds with three decimals, exactly (no binary rounding in the file).
std::string micros(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return buf;
}

}  // namespace

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void set_enabled(bool on) {
  if (on) {
    uint64_t expected = 0;
    registry().origin_ns.compare_exchange_strong(expected, now_ns());
  }
  detail::g_enabled.store(on, std::memory_order_relaxed);
}

namespace {
void append(const Event& event) {
  ThreadBuffer& b = this_thread_buffer();
  const size_t i = b.count.load(std::memory_order_relaxed);
  const size_t chunk = i / kChunkEvents;
  if (chunk >= kMaxChunks) {
    b.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Event* events = b.chunks[chunk].load(std::memory_order_relaxed);
  if (events == nullptr) {
    events = new Event[kChunkEvents];
    b.chunks[chunk].store(events, std::memory_order_release);
  }
  events[i % kChunkEvents] = event;
  b.count.store(i + 1, std::memory_order_release);
}
}  // namespace

void record(const char* name, const char* category, uint64_t start_ns, uint64_t end_ns, const char* arg_name,
            int64_t arg) {
  append(Event{name, category, arg_name, arg, start_ns, end_ns - start_ns, 0, -1});
}

void record_on_track(int64_t track, const char* track_label, const char* name, const char* category, uint64_t start_ns,
                     uint64_t end_ns, const char* arg_name, int64_t arg) {
  // The label rides on a zero-length "track_label" event; write_json() turns it into the name.
  append(Event{name, category, arg_name, arg, start_ns, end_ns - start_ns, 0, track});
  append(Event{track_label, "track_label", nullptr, 0, start_ns, 0, 0, track});
}

void reserve_this_thread(size_t events) {
  ThreadBuffer& b = this_thread_buffer();
  const size_t first = b.count.load(std::memory_order_relaxed) / kChunkEvents;
  const size_t last = std::min(kMaxChunks - 1, (b.count.load(std::memory_order_relaxed) + events) / kChunkEvents);
  for (size_t c = first; c <= last; ++c)
    if (b.chunks[c].load(std::memory_order_relaxed) == nullptr) b.chunks[c].store(new Event[kChunkEvents], std::memory_order_release);
}

void name_this_thread(const char* name) { this_thread_buffer().name.store(name, std::memory_order_relaxed); }

std::vector<Event> snapshot() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<Event> out;
  for (const auto& b : r.buffers) append_events(*b, 0, out);
  return out;
}

size_t thread_event_count() { return this_thread_buffer().count.load(std::memory_order_relaxed); }

std::vector<Event> thread_events_since(size_t from) {
  std::vector<Event> out;
  append_events(this_thread_buffer(), from, out);
  return out;
}

void write_json(const std::filesystem::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) fail_errno(path.string() + ": cannot open the trace file for writing");
  const int pid = static_cast<int>(::getpid());
  Registry& r = registry();
  const uint64_t origin = r.origin_ns.load();
  std::fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  std::fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"lemma\"}}", pid);
  size_t dropped = 0;
  {
    std::lock_guard lock(r.mutex);
    for (const auto& b : r.buffers) {
      dropped += b->dropped.load();
      if (const char* name = b->name.load())
        std::fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", pid,
                     b->tid, escaped(name).c_str());
    }
  }
  std::set<int64_t> labelled;
  for (const Event& e : snapshot()) {
    if (std::strcmp(e.category, "track_label") == 0) {
      if (labelled.insert(e.tid).second)
        std::fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%lld,\"args\":{\"name\":\"%s %lld\"}}",
                     pid, static_cast<long long>(e.tid), escaped(e.name).c_str(), static_cast<long long>(e.track));
      continue;
    }
    const uint64_t start = e.start_ns > origin ? e.start_ns - origin : 0;
    std::fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":%lld,\"args\":{",
                 escaped(e.name).c_str(), escaped(e.category).c_str(), micros(start).c_str(), micros(e.duration_ns).c_str(),
                 pid, static_cast<long long>(e.tid));
    if (e.arg_name != nullptr) std::fprintf(f, "\"%s\":%lld", escaped(e.arg_name).c_str(), static_cast<long long>(e.arg));
    std::fprintf(f, "}}");
  }
  std::fprintf(f, "\n]}\n");
  const bool ok = std::fflush(f) == 0 && std::ferror(f) == 0;
  std::fclose(f);
  if (!ok) fail<IoError>("{}: writing the trace failed", path.string());
  if (dropped > 0) log().warn("trace: {} events dropped (a thread's buffer was full)", dropped);
}

FileSession::FileSession(std::filesystem::path path) : path_(std::move(path)) {
  // Fail now, not after a long run, when the file cannot be written.
  std::FILE* f = std::fopen(path_.c_str(), "w");
  if (f == nullptr) fail_errno(path_.string() + ": cannot open the trace file for writing");
  std::fclose(f);
  name_this_thread("main");
  set_enabled(true);
}

FileSession::~FileSession() {
  set_enabled(false);
  try {
    write_json(path_);
  } catch (const std::exception& e) {
    log().error("trace: {}", e.what());
  }
}

}  // namespace lemma::trace
