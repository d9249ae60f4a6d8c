// Waiting with a deadline for another rank: spin briefly (a peer on another core answers within
// microseconds), then yield the core on every poll (ranks may outnumber cores: `mpirun
// --oversubscribe`, where spinning would starve the very peer being waited for).
#pragma once

#include <chrono>
#include <cstdint>

namespace lemma::dist {

class Poller {
 public:
  explicit Poller(std::chrono::milliseconds timeout)
      : deadline_(std::chrono::steady_clock::now() + timeout) {}

  // Call once per failed poll; true once the deadline has passed.
  bool expired();

 private:
  std::chrono::steady_clock::time_point deadline_ = {};
  std::uint64_t polls_ = 0;
};

}  // namespace lemma::dist
