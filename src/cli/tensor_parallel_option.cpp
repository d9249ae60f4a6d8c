#include "cli/tensor_parallel_option.h"

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/dist/thread_communicator.h"

namespace lemma::cli {

void TensorParallelFlag::add_to(CLI::App* sub) {
  sub->add_option("--tensor-parallel-size,--tp", size,
                  "Tensor-parallel ranks (G7): the model's heads, MLP and vocabulary split over this many ranks, "
                  "each holding only its slices: the processes of `mpirun -np N`, else threads of this one (default 1)");
  add_dist_options(sub, dist);
}

TensorParallelModel::TensorParallelModel(const std::string& path, LoadMode mode, const RuntimeOptions& runtime,
                                         const TensorParallelFlag& flag, int threads_per_rank) {
  const int size = flag.size;
  if (size < 1) fail<InvalidArgument>("--tensor-parallel-size must be >= 1, got {}", size);
  if (launched_by_mpirun()) {
    open_mpi_rank(path, mode, runtime, size, threads_per_rank, flag.dist);
    return;
  }
  models_.resize(static_cast<size_t>(size));
  if (size == 1) {
    models_[0].emplace(Model::open(path, mode, runtime));
    return;
  }
  auto comms = dist::ThreadCommunicator::create_group(size, {.label = "tp"});
  // Loading needs no collective: every rank opens its slices at once, then all are checked.
  dist::run_rank_threads(size, [&](int r) {
    RuntimeOptions rt = runtime;
    rt.tensor_parallel = std::move(comms[static_cast<size_t>(r)]);
    rt.tensor_parallel_leader = true;
    rt.pin_threads = false;  // the ranks share this process's CPUs: pinning would stack them on the first ones
    models_[static_cast<size_t>(r)].emplace(Model::open(path, mode, rt));
  });
  const TensorParallelShard& shard = *models_[0]->tensor_parallel();
  log().info("tensor parallel: {} ranks (threads), {:.1f} of {:.1f} MiB of matrices per rank", size,
             static_cast<double>(shard.matrix_bytes) / (1 << 20), static_cast<double>(shard.full_matrix_bytes) / (1 << 20));
  for (int r = 1; r < size; ++r)
    followers_.emplace_back([this, r, threads_per_rank] {
      try {
        models_[static_cast<size_t>(r)]->follow(threads_per_rank);
      } catch (const std::exception& e) {
        log().error("tensor parallel rank {}: {}", r, e.what());
      }
    });
}

void TensorParallelModel::open_mpi_rank(const std::string& path, LoadMode mode, const RuntimeOptions& runtime, int size,
                                        int threads_per_rank, const DistFlags& dist) {
  world_ = open_world(dist);
  dist::Communicator& comm = world_->comm();
  if (comm.size() != size)
    fail<InvalidArgument>("--tensor-parallel-size {} under mpirun -np {}: give one tensor-parallel rank per process "
                          "(the two must be equal)", size, comm.size());
  RuntimeOptions rt = runtime;
  if (size > 1) {
    rt.tensor_parallel = std::shared_ptr<dist::Communicator>(world_, &comm);  // the world owns it
    rt.tensor_parallel_leader = true;
    // Every process would pin its workers from the first allowed CPU on; mpirun places the ranks.
    rt.pin_threads = false;
  }
  models_.resize(1);
  models_[0].emplace(Model::open(path, mode, rt));
  if (comm.rank() == 0) return;
  follower_ = true;
  models_[0]->follow(threads_per_rank);
}

TensorParallelModel::~TensorParallelModel() {
  if (world_ && !follower_ && models_.size() == 1 && models_[0] && models_[0]->tensor_parallel()) {
    try {
      models_[0]->stop_followers();
    } catch (const std::exception& e) {
      log().error("tensor parallel: stopping the followers: {}", e.what());
    }
  }
  if (followers_.empty()) return;
  try {
    models_[0]->stop_followers();
  } catch (const std::exception& e) {
    log().error("tensor parallel: stopping the followers: {}", e.what());
  }
  for (std::thread& t : followers_) t.join();
}

}  // namespace lemma::cli
