// Driving tensor-parallel ranks from one of them (the start of G7's serving half, issue 36 item 6):
// rank 0 runs the caller's code (generate, logits, the engine) and, inside each Model::forward,
// broadcasts the batch and its KV cache's shape; every other rank sits in Model::follow(), runs the
// same forward on a cache of the same blocks (its KV heads only), and returns when rank 0 sends stop.
// The wire format is a header of two int64 (kind, payload words) and the payload, both broadcast.
// Functions of one rank's thread; nothing shared.
#pragma once

#include <cstdint>
#include <vector>

#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/model/forward_batch.h"

namespace lemma::dist {
class Communicator;
}

namespace lemma {

class KvCache;

// Rank 0: the batch of the forward about to run, over `cache` (the caller's: its address tells the
// followers which of their caches to use).
void send_forward_step(dist::Communicator& comm, const ForwardBatch& batch, const KvCache& cache);
// Rank 0: the followers return from Model::follow().
void send_stop_step(dist::Communicator& comm);

// A follower's copy of one step: the batch's spans point into the vectors.
struct ReceivedStep {
  bool stop = false;
  uint64_t cache_id = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  kernels::KvDtype kv_dtype = kernels::KvDtype::kF32;
  std::vector<int32_t> ints;  // every sequence's tokens, block table and tree parents, one after the other
  ForwardBatch batch;
};
// Ranks 1..: the next step from rank 0 (blocks until it comes or the group's timeout throws).
void receive_step(dist::Communicator& comm, ReceivedStep& step);

}  // namespace lemma
