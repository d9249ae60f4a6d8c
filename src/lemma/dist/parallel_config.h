// How the world's ranks divide into parallel dimensions and the process groups that follow. A rank's
// coordinates: world rank = ((pp * dp + dp_index) * ep + ep_index) * tp + tp_index, so a TP group is
// consecutive ranks (mpirun places consecutive ranks on one host, where TP's per-layer all-reduces
// take the shared-memory path) and pipeline stages are the outermost (their traffic is smallest).
#pragma once

#include <memory>
#include <string>

#include "lemma/dist/communicator.h"

namespace lemma::dist {

struct ParallelConfig {
  int tp = 1;  // tensor parallel: shards of every layer
  int pp = 1;  // pipeline parallel: stages of layers
  int ep = 1;  // expert parallel: shards of the experts
  int dp = 1;  // data parallel: engine replicas
};

// Throws InvalidArgument naming the bad size, or the product against the world size.
void validate(const ParallelConfig& config, int world_size);

struct ParallelCoordinates {
  int tp = 0, pp = 0, ep = 0, dp = 0;
};
ParallelCoordinates coordinates_of(const ParallelConfig& config, int world_rank);

// The groups this rank belongs to, one per dimension; a group's rank is this rank's index along it.
struct ProcessGroups {
  std::unique_ptr<Communicator> tp = {};
  std::unique_ptr<Communicator> pp = {};
  std::unique_ptr<Communicator> ep = {};
  std::unique_ptr<Communicator> dp = {};
};

// Collective over `world`: validates, then splits the world four times (in the order tp, pp, ep, dp
// on every rank).
ProcessGroups make_process_groups(Communicator& world, const ParallelConfig& config);

}  // namespace lemma::dist
