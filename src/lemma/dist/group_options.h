// What every communicator of one world shares: the timeout of its collectives, the rule that picks a
// backend for each group (and for every group split from it), and the world's failure flag.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>

namespace lemma::dist {

// kAuto: shared memory when every rank of the group is on one host, else MPI.
enum class Transport { kAuto, kMpi, kShm };

struct GroupOptions {
  // A collective that has not heard from a peer within this long throws DistError naming it.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  Transport transport = Transport::kAuto;
  // Bytes of each rank's shared-memory slot (two of them, double-buffered); larger messages pass
  // through it in pieces.
  std::size_t shm_slot_bytes = std::size_t{1} << 20;
  // Set once any collective of the world failed: the world then exits without MPI_Finalize, which
  // would wait for the lost rank forever. Shared by every group of one world.
  std::shared_ptr<std::atomic<bool>> world_failed = std::make_shared<std::atomic<bool>>(false);
};

const char* transport_name(Transport transport);

}  // namespace lemma::dist
