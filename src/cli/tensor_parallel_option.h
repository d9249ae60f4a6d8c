// `--tensor-parallel-size T` (G7) for `logits` and `generate`: T > 1 runs the model as T ranks of this
// process (one thread each, over dist::ThreadCommunicator), each opening the file itself and keeping
// only its slices; rank 0 runs the command and prints, the others follow its forwards
// (Model::follow), so the output is the single-rank one. Under mpirun (`mpirun -np T lemma logits
// --tensor-parallel-size T ...`) each process is one rank over the world communicator (shared memory
// on one host, else MPI: --dist-transport); rank 0 prints, the others follow and print nothing.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/dist_world.h"
#include "lemma/base/mapped_file.h"
#include "lemma/model/model.h"

namespace lemma::cli {

struct TensorParallelFlag {
  int size = 1;
  DistFlags dist;  // under mpirun: the world's timeout and transport
  void add_to(CLI::App* sub);
};

// The model of a command: one rank, or T in-process ranks whose followers run until destruction.
class TensorParallelModel {
 public:
  // Opens every rank's shard (in parallel); throws the lowest rank's load error, with no follower
  // left running. `threads_per_rank`: each follower's forward threads (the leader's are the caller's).
  // Under mpirun the world's size must be `size`; on ranks 1.. the constructor follows rank 0's
  // forwards until it stops them, and is_follower() then tells the command to return quietly.
  TensorParallelModel(const std::string& path, LoadMode mode, const RuntimeOptions& runtime,
                      const TensorParallelFlag& flag, int threads_per_rank);
  ~TensorParallelModel();
  TensorParallelModel(const TensorParallelModel&) = delete;
  TensorParallelModel& operator=(const TensorParallelModel&) = delete;

  const Model& model() const { return *models_.front(); }
  bool is_follower() const { return follower_; }

 private:
  void open_mpi_rank(const std::string& path, LoadMode mode, const RuntimeOptions& runtime, int size, int threads_per_rank,
                     const DistFlags& dist);

  std::shared_ptr<dist::World> world_;  // under mpirun; outlives the models (their communicator is its)
  bool follower_ = false;
  std::vector<std::optional<Model>> models_;
  std::vector<std::thread> followers_;
};

}  // namespace lemma::cli
