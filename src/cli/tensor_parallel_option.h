// `--tensor-parallel-size T` (G7) for `logits` and `generate`: T > 1 runs the model as T ranks of this
// process (one thread each, over dist::ThreadCommunicator), each opening the file itself and keeping
// only its slices; rank 0 runs the command and prints, the others follow its forwards
// (Model::follow), so the output is the single-rank one. Under mpirun (issue 36 item 6) the world
// communicator will take the threads' place.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lemma/base/mapped_file.h"
#include "lemma/model/model.h"

namespace lemma::cli {

struct TensorParallelFlag {
  int size = 1;
  void add_to(CLI::App* sub);
};

// The model of a command: one rank, or T in-process ranks whose followers run until destruction.
class TensorParallelModel {
 public:
  // Opens every rank's shard (in parallel); throws the lowest rank's load error, with no follower
  // left running. `threads_per_rank`: each follower's forward threads (the leader's are the caller's).
  TensorParallelModel(const std::string& path, LoadMode mode, const RuntimeOptions& runtime, int size,
                      int threads_per_rank);
  ~TensorParallelModel();
  TensorParallelModel(const TensorParallelModel&) = delete;
  TensorParallelModel& operator=(const TensorParallelModel&) = delete;

  const Model& model() const { return *models_.front(); }

 private:
  std::vector<std::optional<Model>> models_;
  std::vector<std::thread> followers_;
};

}  // namespace lemma::cli
