#include "lemma/dist/poller.h"

#include <sched.h>

namespace lemma::dist {

namespace {
// About a microsecond of spinning at most before the first yield.
constexpr std::uint64_t kSpinPolls = 64;
}  // namespace

bool Poller::expired() {
  ++polls_;
  if (polls_ <= kSpinPolls) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    return false;
  }
  sched_yield();
  // The clock only every few polls: a yield is already microseconds.
  return (polls_ % 16 == 0) && std::chrono::steady_clock::now() > deadline_;
}

}  // namespace lemma::dist
