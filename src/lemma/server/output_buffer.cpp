#include "lemma/server/output_buffer.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace lemma::server {

void OutputBuffer::set_notify(std::function<void()> notify) {
  std::lock_guard lock(mu_);
  notify_ = std::move(notify);
}

void OutputBuffer::push(CompletionDelta delta) {
  std::function<void()> notify;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    if (overflowed_ || pending_tokens_ + delta.token_ids.size() > capacity_tokens_) {
      overflowed_ = true;
      if (!delta.finish_reason) return;  // nothing left worth delivering
      delta.token_ids.clear();
      delta.logprobs.clear();
    }
    pending_tokens_ += delta.token_ids.size();
    max_pending_tokens_ = std::max(max_pending_tokens_, pending_tokens_);
    // Coalesce with the newest waiting delta of the same, still open, choice.
    auto same = std::find_if(queue_.rbegin(), queue_.rend(), [&](const CompletionDelta& d) { return d.index == delta.index; });
    if (same != queue_.rend() && !same->finish_reason) {
      CompletionDelta& last = *same;
      last.token_ids.insert(last.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
      last.logprobs.insert(last.logprobs.end(), std::make_move_iterator(delta.logprobs.begin()),
                           std::make_move_iterator(delta.logprobs.end()));
      if (delta.finish_reason) {
        last.finish_reason = delta.finish_reason;
        last.error = std::move(delta.error);
        last.cached_prompt_tokens = delta.cached_prompt_tokens;
        last.queue_seconds = delta.queue_seconds;
      }
    } else {
      queue_.push_back(std::move(delta));
    }
    if (notify_armed_ && notify_) {
      notify_armed_ = false;
      notify = notify_;
    }
  }
  if (notify) notify();
}

std::vector<CompletionDelta> OutputBuffer::take() {
  std::lock_guard lock(mu_);
  std::vector<CompletionDelta> out(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  pending_tokens_ = 0;
  notify_armed_ = true;
  return out;
}

bool OutputBuffer::overflowed() const {
  std::lock_guard lock(mu_);
  return overflowed_;
}

size_t OutputBuffer::pending_tokens() const {
  std::lock_guard lock(mu_);
  return pending_tokens_;
}

size_t OutputBuffer::max_pending_tokens() const {
  std::lock_guard lock(mu_);
  return max_pending_tokens_;
}

void OutputBuffer::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  notify_ = nullptr;
  queue_.clear();
  pending_tokens_ = 0;
}

}  // namespace lemma::server
