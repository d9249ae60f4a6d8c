#include "lemma/dist/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "lemma/dist/collective_checks.h"
#include "lemma/dist/group_factory.h"
#include "lemma/dist/mpi_handle.h"
#include "lemma/dist/poller.h"
#include "lemma/dist/reduce.h"

namespace lemma::dist {

namespace {
// Messages larger than this travel as several (MPI counts are ints; same tag, and MPI keeps the
// order of messages between two ranks on one tag).
constexpr std::size_t kMaxPieceBytes = std::size_t{1} << 30;
// Up to this many bytes an all-reduce sends every rank's whole vector to every other (one round, the
// lowest latency); above it, reduce-scatter then all-gather (each rank moves 2(N-1)/N of the bytes).
constexpr std::size_t kGatherAllReduceBytes = 64 * 1024;
// MPI guarantees tags up to 32767.
constexpr int kTagLimit = 32768;

std::string mpi_error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

// Balanced chunks: rank c owns [begin(c), begin(c + 1)).
std::size_t chunk_begin(std::size_t total, int chunk, int chunks) {
  return total * static_cast<std::size_t>(chunk) / static_cast<std::size_t>(chunks);
}
}  // namespace

void check_mpi(int rc, const std::string& what) {
  if (rc != MPI_SUCCESS) fail<DistError>("{}: {}", what, mpi_error_string(rc));
}

// The messages of one step of a collective, waited for together against the group's deadline.
class MpiCommunicator::Exchange {
 public:
  Exchange(MpiCommunicator& comm, MPI_Comm mpi, int tag, const char* op)
      : comm_(comm), mpi_(mpi), tag_(tag), op_(op) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  void recv(void* data, std::size_t bytes, int peer) { post(data, bytes, peer, true); }
  void send(const void* data, std::size_t bytes, int peer) { post(const_cast<void*>(data), bytes, peer, false); }

  // Returns once every message is through; throws DistError naming the first peer that sent the
  // wrong size, failed, or did not answer before the deadline.
  void wait() {
    const int n = static_cast<int>(requests_.size());
    std::vector<int> indices(requests_.size());
    std::vector<MPI_Status> statuses(requests_.size());
    Poller poller(comm_.options().timeout);
    int pending = n;
    while (pending > 0) {
      int done = 0;
      const int rc = MPI_Testsome(n, requests_.data(), &done, indices.data(), statuses.data());
      if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        comm_.fail_collective(op_, "MPI_Testsome failed: " + mpi_error_string(rc));
      }
      if (done == MPI_UNDEFINED) break;
      for (int k = 0; k < done; ++k) check_completed(items_[static_cast<std::size_t>(indices[k])], statuses[k],
                                                     rc == MPI_ERR_IN_STATUS);
      pending -= done;
      if (done == 0 && poller.expired()) report_timeout();
    }
  }

 private:
  struct Item {
    int peer = 0;
    bool is_recv = false;
    std::size_t bytes = 0;
  };

  void post(void* data, std::size_t bytes, int peer, bool is_recv) {
    auto* p = static_cast<char*>(data);
    std::size_t offset = 0;
    do {  // a zero-byte message still travels: it proves the peer is alive and agrees on the size
      const std::size_t piece = std::min(kMaxPieceBytes, bytes - offset);
      MPI_Request request = MPI_REQUEST_NULL;
      const int count = static_cast<int>(piece);
      const int rc = is_recv ? MPI_Irecv(p + offset, count, MPI_BYTE, peer, tag_, mpi_, &request)
                             : MPI_Isend(p + offset, count, MPI_BYTE, peer, tag_, mpi_, &request);
      if (rc != MPI_SUCCESS) {
        comm_.fail_collective(op_, fmt::format("posting a message {} {} failed: {}", is_recv ? "from" : "to",
                                               comm_.describe_rank(peer), mpi_error_string(rc)));
      }
      requests_.push_back(request);
      items_.push_back({peer, is_recv, piece});
      offset += piece;
    } while (offset < bytes);
  }

  void check_completed(const Item& item, const MPI_Status& status, bool errors_in_status) {
    if (errors_in_status && status.MPI_ERROR != MPI_SUCCESS) {
      const std::string why = status.MPI_ERROR == MPI_ERR_TRUNCATE
                                  ? fmt::format("sent more than the {} bytes expected (sizes disagree between ranks)", item.bytes)
                                  : "failed: " + mpi_error_string(status.MPI_ERROR);
      comm_.fail_collective(op_, comm_.describe_rank(item.peer) + " " + why);
    }
    if (!item.is_recv) return;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (static_cast<std::size_t>(count) != item.bytes) {
      comm_.fail_collective(op_, fmt::format("{} sent {} bytes, expected {} (sizes disagree between ranks)",
                                             comm_.describe_rank(item.peer), count, item.bytes));
    }
  }

  [[noreturn]] void report_timeout() {
    // The ranks that did not send; if every message arrived, those that did not take ours.
    std::vector<int> silent;
    for (bool receives : {true, false}) {
      for (std::size_t i = 0; i < requests_.size(); ++i) {
        if (requests_[i] != MPI_REQUEST_NULL && items_[i].is_recv == receives &&
            std::find(silent.begin(), silent.end(), items_[i].peer) == silent.end()) {
          silent.push_back(items_[i].peer);
        }
      }
      if (!silent.empty()) break;
    }
    std::sort(silent.begin(), silent.end());
    comm_.fail_collective(op_, comm_.describe_silence(silent));
  }

  MpiCommunicator& comm_;
  MPI_Comm mpi_;
  int tag_ = 0;
  const char* op_;
  std::vector<MPI_Request> requests_;
  std::vector<Item> items_;
};

namespace {
// Every world rank's host and pid (fixed-size records through one MPI_Allgather).
std::shared_ptr<const std::vector<PeerProcess>> gather_world_processes() {
  struct Record {
    char host[248];
    long pid;
  };
  Record mine = {};
  const PeerProcess me = this_process();
  me.host.copy(mine.host, sizeof(mine.host) - 1);
  mine.pid = me.pid;
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<Record> all(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&mine, sizeof(Record), MPI_BYTE, all.data(), sizeof(Record), MPI_BYTE, MPI_COMM_WORLD),
            "dist: gathering every rank's host and pid");
  auto processes = std::make_shared<std::vector<PeerProcess>>();
  for (const Record& r : all) processes->push_back({std::string(r.host), r.pid});
  return processes;
}
}  // namespace

std::unique_ptr<MpiCommunicator> make_mpi_communicator(MPI_Comm comm, std::string label, GroupOptions options,
                                                       std::shared_ptr<const std::vector<PeerProcess>> world_processes) {
  auto handle = std::make_unique<MpiCommunicator::Handle>();
  handle->world_processes = world_processes ? std::move(world_processes) : gather_world_processes();
  check_mpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "dist: MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_dup(comm, &handle->collectives), "dist: MPI_Comm_dup");
  check_mpi(MPI_Comm_dup(comm, &handle->point_to_point), "dist: MPI_Comm_dup");
  int size = 0;
  MPI_Comm_size(comm, &size);
  MPI_Group group, world;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> ranks(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) ranks[static_cast<std::size_t>(r)] = r;
  handle->world_ranks.resize(ranks.size());
  MPI_Group_translate_ranks(group, size, ranks.data(), world, handle->world_ranks.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  return std::make_unique<MpiCommunicator>(std::move(handle), std::move(label), std::move(options));
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Handle> handle, std::string label, GroupOptions options)
    : handle_(std::move(handle)), label_(std::move(label)), options_(std::move(options)) {
  MPI_Comm_rank(handle_->collectives, &rank_);
  MPI_Comm_size(handle_->collectives, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a failure, requests to the lost rank may still be posted: freeing could wait on them.
  if (finalized || !failure_.empty()) return;
  MPI_Comm_free(&handle_->collectives);
  MPI_Comm_free(&handle_->point_to_point);
}

std::string MpiCommunicator::describe_rank(int rank) const {
  if (rank < 0 || rank >= size_) return fmt::format("rank {}", rank);
  const int world = handle_->world_ranks[static_cast<std::size_t>(rank)];
  return world == rank ? fmt::format("rank {}", rank) : fmt::format("rank {} (world rank {})", rank, world);
}

std::string MpiCommunicator::describe_silence(const std::vector<int>& silent) const {
  std::vector<int> exited, others;
  for (int r : silent) {
    const int world = r >= 0 && r < size_ ? handle_->world_ranks[static_cast<std::size_t>(r)] : -1;
    const bool gone = world >= 0 && static_cast<std::size_t>(world) < handle_->world_processes->size() &&
                      peer_state((*handle_->world_processes)[static_cast<std::size_t>(world)]) == PeerState::kExited;
    (gone ? exited : others).push_back(r);
  }
  auto list = [&](const std::vector<int>& ranks) {
    std::string text;
    for (int r : ranks) text += (text.empty() ? "" : ", ") + describe_rank(r);
    return text;
  };
  const long long ms = options_.timeout.count();
  if (!exited.empty()) {
    std::string text;
    for (int r : exited) {
      const int world = handle_->world_ranks[static_cast<std::size_t>(r)];
      text += fmt::format("{}{} (pid {})", text.empty() ? "" : ", ", describe_rank(r),
                          (*handle_->world_processes)[static_cast<std::size_t>(world)].pid);
    }
    text += fmt::format(" exited; no answer within {} ms", ms);
    if (!others.empty()) text += fmt::format(" (also silent: {}, waiting on it)", list(others));
    return text;
  }
  if (others.size() == 1) return fmt::format("no answer from {} within {} ms (it died or is stuck)", list(others), ms);
  return fmt::format("no answer from {} within {} ms (one of them died or is stuck, the others may be waiting on it)",
                     list(others), ms);
}

std::string MpiCommunicator::record_failure(const char* op, const std::string& group_name, const std::string& what) {
  failure_ = fmt::format("dist: {} on group '{}' (rank {} of {}): {}", op, group_name, rank_, size_, what);
  options_.world_failed->store(true);
  return failure_;
}

void MpiCommunicator::throw_if_failed(const char* op) const {
  if (!failure_.empty()) fail<DistError>("dist: {} on group '{}' after an earlier failure: {}", op, name(), failure_);
}

int MpiCommunicator::next_tag() {
  tag_ = (tag_ + 1) % kTagLimit;
  return tag_;
}

void MpiCommunicator::all_reduce(std::span<float> data, ReduceOp op) {
  throw_if_failed("all_reduce");
  if (size_ == 1) return;
  if (data.size_bytes() <= kGatherAllReduceBytes || data.size() < static_cast<std::size_t>(size_)) {
    all_reduce_by_gather(data, op);
  } else {
    all_reduce_by_chunks(data, op);
  }
}

void MpiCommunicator::all_reduce_by_gather(std::span<float> data, ReduceOp op) {
  const std::size_t n = data.size();
  scratch_.resize(n * static_cast<std::size_t>(size_));
  std::vector<const float*> sources(static_cast<std::size_t>(size_));
  Exchange exchange(*this, handle_->collectives, next_tag(), "all_reduce");
  for (int p = 0; p < size_; ++p) {
    float* row = scratch_.data() + n * static_cast<std::size_t>(p);
    sources[static_cast<std::size_t>(p)] = p == rank_ ? data.data() : row;
    if (p == rank_) continue;
    exchange.recv(row, n * sizeof(float), p);
    exchange.send(data.data(), n * sizeof(float), p);
  }
  exchange.wait();
  reduce_in_rank_order(data, sources, op);
}

void MpiCommunicator::all_reduce_by_chunks(std::span<float> data, ReduceOp op) {
  const std::size_t n = data.size();
  const std::size_t mine = chunk_begin(n, rank_, size_);
  const std::size_t mine_size = chunk_begin(n, rank_ + 1, size_) - mine;
  scratch_.resize(mine_size * static_cast<std::size_t>(size_));
  std::vector<const float*> sources(static_cast<std::size_t>(size_));
  {  // reduce-scatter: rank c gathers everyone's chunk c and adds them in rank order
    Exchange exchange(*this, handle_->collectives, next_tag(), "all_reduce");
    for (int p = 0; p < size_; ++p) {
      float* row = scratch_.data() + mine_size * static_cast<std::size_t>(p);
      sources[static_cast<std::size_t>(p)] = p == rank_ ? data.data() + mine : row;
      if (p == rank_) continue;
      exchange.recv(row, mine_size * sizeof(float), p);
      const std::size_t begin = chunk_begin(n, p, size_);
      exchange.send(data.data() + begin, (chunk_begin(n, p + 1, size_) - begin) * sizeof(float), p);
    }
    exchange.wait();
  }
  reduce_in_rank_order(data.subspan(mine, mine_size), sources, op);
  // all-gather of the reduced chunks
  Exchange exchange(*this, handle_->collectives, next_tag(), "all_reduce");
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    const std::size_t begin = chunk_begin(n, p, size_);
    exchange.recv(data.data() + begin, (chunk_begin(n, p + 1, size_) - begin) * sizeof(float), p);
    exchange.send(data.data() + mine, mine_size * sizeof(float), p);
  }
  exchange.wait();
}

void MpiCommunicator::all_gather(std::span<const float> mine, std::span<float> gathered) {
  check_gather_sizes(*this, mine.size(), gathered.size());
  throw_if_failed("all_gather");
  const std::size_t n = mine.size();
  std::copy(mine.begin(), mine.end(), gathered.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(rank_)));
  Exchange exchange(*this, handle_->collectives, next_tag(), "all_gather");
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    exchange.recv(gathered.data() + n * static_cast<std::size_t>(p), n * sizeof(float), p);
    exchange.send(mine.data(), n * sizeof(float), p);
  }
  exchange.wait();
}

void MpiCommunicator::reduce_scatter(std::span<const float> input, std::span<float> out) {
  check_scatter_sizes(*this, input.size(), out.size());
  throw_if_failed("reduce_scatter");
  const std::size_t m = out.size();
  scratch_.resize(m * static_cast<std::size_t>(size_));
  std::vector<const float*> sources(static_cast<std::size_t>(size_));
  Exchange exchange(*this, handle_->collectives, next_tag(), "reduce_scatter");
  for (int p = 0; p < size_; ++p) {
    float* row = scratch_.data() + m * static_cast<std::size_t>(p);
    sources[static_cast<std::size_t>(p)] = p == rank_ ? input.data() + m * static_cast<std::size_t>(rank_) : row;
    if (p == rank_) continue;
    exchange.recv(row, m * sizeof(float), p);
    exchange.send(input.data() + m * static_cast<std::size_t>(p), m * sizeof(float), p);
  }
  exchange.wait();
  reduce_in_rank_order(out, sources, ReduceOp::kSum);
}

void MpiCommunicator::broadcast(std::span<std::byte> data, int root) {
  check_rank(*this, root, "broadcast root");
  throw_if_failed("broadcast");
  // Straight from the root to each rank (no tree): a receiver that times out names the root itself.
  // A dead non-root is found by the next collective that needs its data.
  Exchange exchange(*this, handle_->collectives, next_tag(), "broadcast");
  if (rank_ == root) {
    for (int p = 0; p < size_; ++p) {
      if (p != root) exchange.send(data.data(), data.size(), p);
    }
  } else {
    exchange.recv(data.data(), data.size(), root);
  }
  exchange.wait();
}

void MpiCommunicator::all_to_all_v(std::span<const std::byte> send, std::span<const std::size_t> send_counts,
                                   std::span<const std::size_t> send_offsets, std::span<std::byte> recv,
                                   std::span<const std::size_t> recv_counts,
                                   std::span<const std::size_t> recv_offsets) {
  check_all_to_all_layout(*this, send.size(), send_counts, send_offsets, recv.size(), recv_counts, recv_offsets);
  throw_if_failed("all_to_all_v");
  const auto me = static_cast<std::size_t>(rank_);
  if (send_counts[me] != recv_counts[me]) {
    fail<InvalidArgument>("dist: all_to_all_v on group '{}': rank {} sends itself {} bytes but expects {}", name(),
                          rank_, send_counts[me], recv_counts[me]);
  }
  std::memmove(recv.data() + recv_offsets[me], send.data() + send_offsets[me], send_counts[me]);
  Exchange exchange(*this, handle_->collectives, next_tag(), "all_to_all_v");
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    const auto q = static_cast<std::size_t>(p);
    exchange.recv(recv.data() + recv_offsets[q], recv_counts[q], p);
    exchange.send(send.data() + send_offsets[q], send_counts[q], p);
  }
  exchange.wait();
}

void MpiCommunicator::send(std::span<const std::byte> data, int dest, int tag) {
  check_rank(*this, dest, "send destination");
  if (tag < 0 || tag >= kTagLimit) fail<InvalidArgument>("dist: send tag {} is outside [0, {})", tag, kTagLimit);
  throw_if_failed("send");
  Exchange exchange(*this, handle_->point_to_point, tag, "send");
  exchange.send(data.data(), data.size(), dest);
  exchange.wait();
}

void MpiCommunicator::recv(std::span<std::byte> data, int source, int tag) {
  check_rank(*this, source, "recv source");
  if (tag < 0 || tag >= kTagLimit) fail<InvalidArgument>("dist: recv tag {} is outside [0, {})", tag, kTagLimit);
  throw_if_failed("recv");
  Exchange exchange(*this, handle_->point_to_point, tag, "recv");
  exchange.recv(data.data(), data.size(), source);
  exchange.wait();
}

void MpiCommunicator::barrier() {
  throw_if_failed("barrier");
  // Zero-byte messages with every peer (not MPI_Ibarrier): a rank that never comes is named.
  Exchange exchange(*this, handle_->collectives, next_tag(), "barrier");
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    exchange.recv(nullptr, 0, p);
    exchange.send(nullptr, 0, p);
  }
  exchange.wait();
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::split_mpi(int color, int key, const std::string& label) {
  if (color < 0) fail<InvalidArgument>("dist: split of group '{}' into '{}': color {} must be >= 0", name(), label, color);
  // MPI_Comm_split blocks without a deadline: a barrier first, so a lost rank is named rather than
  // waited for (a rank lost in the instant between the two is not caught).
  barrier();
  MPI_Comm comm = MPI_COMM_NULL;
  const int rc = MPI_Comm_split(handle_->collectives, color, key, &comm);
  if (rc != MPI_SUCCESS) fail_collective("split", "MPI_Comm_split failed: " + mpi_error_string(rc));
  return make_mpi_communicator(comm, label, options_, handle_->world_processes);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key, const std::string& label) {
  return make_group_communicator(split_mpi(color, key, label));
}

}  // namespace lemma::dist
