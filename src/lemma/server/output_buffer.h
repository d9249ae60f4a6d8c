// OutputBuffer: the server's CompletionSink, a bounded hand-off from the engine thread to one
// HTTP stream. Thread-safe: push() from the engine, take()/close() from the stream's strand.
//
// Policy for slow readers: deltas of one choice are coalesced while they wait; when more than
// `capacity_tokens` tokens are waiting undelivered, the buffer overflows: it drops all further
// tokens (keeping only finish reasons, so the engine's final deltas are still seen) and the
// stream ends the request with a "client too slow" error and cancels it in the engine. Memory per
// stream is therefore bounded by capacity_tokens (plus one in-flight socket write).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "lemma/server/engine_client.h"

namespace lemma::server {

class OutputBuffer final : public CompletionSink {
 public:
  explicit OutputBuffer(size_t capacity_tokens) : capacity_tokens_(capacity_tokens) {}

  // Called (without the lock held) after a push makes the buffer non-empty; called again only
  // after the consumer's next take(). Set before submitting the request.
  void set_notify(std::function<void()> notify);

  void push(CompletionDelta delta) override;

  // Everything waiting, oldest first (deltas of one choice coalesced).
  std::vector<CompletionDelta> take();
  bool overflowed() const;
  // Tokens waiting right now, and the most that ever waited (for tests and metrics).
  size_t pending_tokens() const;
  size_t max_pending_tokens() const;
  // The consumer is gone: later pushes are dropped and nobody is notified.
  void close();

 private:
  const size_t capacity_tokens_;
  mutable std::mutex mu_;
  std::deque<CompletionDelta> queue_;
  std::function<void()> notify_;
  size_t pending_tokens_ = 0;
  size_t max_pending_tokens_ = 0;
  bool notify_armed_ = true;
  bool overflowed_ = false;
  bool closed_ = false;
};

}  // namespace lemma::server
