#include "lemma/dist/shm_communicator.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "lemma/dist/collective_checks.h"
#include "lemma/dist/group_factory.h"
#include "lemma/dist/mpi_handle.h"
#include "lemma/dist/poller.h"
#include "lemma/dist/reduce.h"

namespace lemma::dist {

namespace {
constexpr std::size_t kCacheLine = 64;
// Up to this many bytes every rank adds up the whole vector from all slots (one round of flags);
// above it each rank adds its chunk, publishes it, and all copy (two rounds, N times less reading).
constexpr std::size_t kWholeReduceBytes = 32 * 1024;

// Each rank's header, on its own cache lines so that one rank's flag writes do not bounce another's.
struct alignas(kCacheLine) Header {
  std::atomic<std::uint64_t> arrivals{0};
  // The byte count of the operation, by arrival parity: a rank may already publish its next
  // arrival's count while a slower one still checks this one.
  std::atomic<std::uint64_t> bytes[2] = {0, 0};
};
constexpr std::size_t kHeaderBytes = 2 * kCacheLine;
static_assert(sizeof(Header) <= kHeaderBytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "flags shared between processes must be lock-free");

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// MPI promises no alignment for a rank's part of the window; ours starts at the next cache line. The
// segment is mapped page-aligned in every process, so each finds the same offset for every rank.
std::byte* align_to_line(void* p) {
  return reinterpret_cast<std::byte*>(round_up(reinterpret_cast<std::uintptr_t>(p), kCacheLine));
}
}  // namespace

struct ShmCommunicator::Segment {
  MPI_Win window = MPI_WIN_NULL;
  std::vector<Header*> headers;       // by rank
  std::vector<std::byte*> slots;      // by rank: two slots of slot_bytes each
};

ShmCommunicator::ShmCommunicator(std::unique_ptr<MpiCommunicator> mpi)
    : mpi_(std::move(mpi)), segment_(std::make_unique<Segment>()) {
  slot_bytes_ = round_up(std::max<std::size_t>(mpi_->options().shm_slot_bytes, kCacheLine), kCacheLine);
  const std::size_t mine = kCacheLine + kHeaderBytes + 2 * slot_bytes_;
  MPI_Comm comm = mpi_->handle().collectives;
  void* base = nullptr;
  check_mpi(MPI_Win_allocate_shared(static_cast<MPI_Aint>(mine), 1, MPI_INFO_NULL, comm, &base, &segment_->window),
            fmt::format("dist: shared segment of {} bytes for group '{}'", mine, mpi_->label()));
  new (align_to_line(base)) Header();
  const int n = mpi_->size();
  for (int r = 0; r < n; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    void* p = nullptr;
    check_mpi(MPI_Win_shared_query(segment_->window, r, &bytes, &unit, &p), "dist: MPI_Win_shared_query");
    std::byte* aligned = align_to_line(p);
    segment_->headers.push_back(reinterpret_cast<Header*>(aligned));
    segment_->slots.push_back(aligned + kHeaderBytes);
  }
  // Every header is constructed before anyone polls it.
  mpi_->barrier();
}

ShmCommunicator::~ShmCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // MPI_Win_free is collective (a barrier, without a deadline): after a failure the lost rank would
  // never join it, and while an exception unwinds the other ranks may not be coming either.
  if (finalized || !failure_.empty() || std::uncaught_exceptions() > 0) return;
  MPI_Win_free(&segment_->window);
}

std::byte* ShmCommunicator::slot(int r) const {
  return segment_->slots[static_cast<std::size_t>(r)] + (operations_ & 1) * slot_bytes_;
}

void ShmCommunicator::fail_collective(const char* op, const std::string& what) {
  failure_ = mpi_->record_failure(op, name(), what);
  throw DistError(failure_);
}

void ShmCommunicator::throw_if_failed(const char* op) const {
  if (!failure_.empty()) fail<DistError>("dist: {} on group '{}' after an earlier failure: {}", op, name(), failure_);
}

void ShmCommunicator::arrive_and_wait(const char* op, std::uint64_t bytes) {
  ++arrivals_;
  const int n = size();
  Header& me = *segment_->headers[static_cast<std::size_t>(rank())];
  me.bytes[arrivals_ & 1].store(bytes, std::memory_order_relaxed);
  me.arrivals.store(arrivals_, std::memory_order_release);  // publishes our slot and byte count
  Poller poller(mpi_->options().timeout);  // one deadline for the whole wait, not one per peer
  for (int r = 0; r < n; ++r) {
    const Header& peer = *segment_->headers[static_cast<std::size_t>(r)];
    while (peer.arrivals.load(std::memory_order_acquire) < arrivals_) {
      if (poller.expired()) {
        std::vector<int> silent;
        for (int s = r; s < n; ++s) {
          if (segment_->headers[static_cast<std::size_t>(s)]->arrivals.load(std::memory_order_acquire) < arrivals_) {
            silent.push_back(s);
          }
        }
        fail_collective(op, mpi_->describe_silence(silent));
      }
    }
    const std::uint64_t theirs = peer.bytes[arrivals_ & 1].load(std::memory_order_relaxed);
    if (theirs != bytes) {
      fail_collective(op, fmt::format("{} works on {} bytes, this rank on {} (sizes disagree between ranks)",
                                      mpi_->describe_rank(r), theirs, bytes));
    }
  }
}

void ShmCommunicator::all_reduce(std::span<float> data, ReduceOp op) {
  throw_if_failed("all_reduce");
  if (size() == 1) return;
  const std::size_t piece = slot_bytes_ / sizeof(float);
  // An empty vector still meets the others once, so the sizes are checked and the order kept.
  std::size_t begin = 0;
  do {
    all_reduce_piece(data.subspan(begin, std::min(piece, data.size() - begin)), op);
    begin += piece;
  } while (begin < data.size());
}

void ShmCommunicator::all_reduce_piece(std::span<float> piece, ReduceOp op) {
  const int n = size();
  sources_.resize(static_cast<std::size_t>(n));
  std::copy(piece.begin(), piece.end(), float_slot(rank()));
  arrive_and_wait("all_reduce", piece.size_bytes());
  if (piece.size_bytes() <= kWholeReduceBytes || piece.size() < static_cast<std::size_t>(n)) {
    for (int r = 0; r < n; ++r) sources_[static_cast<std::size_t>(r)] = float_slot(r);
    reduce_in_rank_order(piece, sources_, op);
  } else {
    // Rank c adds chunk c and writes it back into its own slot: the others read only their own
    // chunks of it before the second arrival, and chunk c only after.
    const std::size_t total = piece.size();
    auto begin = [&](int c) { return total * static_cast<std::size_t>(c) / static_cast<std::size_t>(n); };
    const std::size_t lo = begin(rank()), hi = begin(rank() + 1);
    for (int r = 0; r < n; ++r) sources_[static_cast<std::size_t>(r)] = float_slot(r) + lo;
    reduce_in_rank_order(piece.subspan(lo, hi - lo), sources_, op);
    std::copy(piece.begin() + static_cast<std::ptrdiff_t>(lo), piece.begin() + static_cast<std::ptrdiff_t>(hi),
              float_slot(rank()) + lo);
    arrive_and_wait("all_reduce", piece.size_bytes());
    for (int c = 0; c < n; ++c) {
      if (c != rank()) std::copy(float_slot(c) + begin(c), float_slot(c) + begin(c + 1), piece.begin() + static_cast<std::ptrdiff_t>(begin(c)));
    }
  }
  next_operation();
}

void ShmCommunicator::all_gather(std::span<const float> mine, std::span<float> gathered) {
  check_gather_sizes(*this, mine.size(), gathered.size());
  throw_if_failed("all_gather");
  const std::size_t piece = slot_bytes_ / sizeof(float);
  const std::size_t m = mine.size();
  std::size_t begin = 0;
  do {
    const std::size_t count = std::min(piece, m - begin);
    std::copy_n(mine.data() + begin, count, float_slot(rank()));
    arrive_and_wait("all_gather", count * sizeof(float));
    for (int r = 0; r < size(); ++r) std::copy_n(float_slot(r), count, gathered.data() + static_cast<std::size_t>(r) * m + begin);
    next_operation();
    begin += piece;
  } while (begin < m);
}

void ShmCommunicator::reduce_scatter(std::span<const float> input, std::span<float> out) {
  check_scatter_sizes(*this, input.size(), out.size());
  throw_if_failed("reduce_scatter");
  const int n = size();
  const std::size_t m = out.size();
  // Each piece carries the same columns of every rank's n blocks: n * piece floats fit a slot.
  const std::size_t piece = std::max<std::size_t>(1, slot_bytes_ / sizeof(float) / static_cast<std::size_t>(n));
  sources_.resize(static_cast<std::size_t>(n));
  std::size_t begin = 0;
  do {
    const std::size_t count = std::min(piece, m - begin);
    float* mine = float_slot(rank());
    for (int d = 0; d < n; ++d) std::copy_n(input.data() + static_cast<std::size_t>(d) * m + begin, count, mine + static_cast<std::size_t>(d) * count);
    arrive_and_wait("reduce_scatter", count * sizeof(float));
    for (int r = 0; r < n; ++r) sources_[static_cast<std::size_t>(r)] = float_slot(r) + static_cast<std::size_t>(rank()) * count;
    reduce_in_rank_order(out.subspan(begin, count), sources_, ReduceOp::kSum);
    next_operation();
    begin += piece;
  } while (begin < m);
}

void ShmCommunicator::broadcast(std::span<std::byte> data, int root) {
  check_rank(*this, root, "broadcast root");
  throw_if_failed("broadcast");
  std::size_t begin = 0;
  do {
    const std::size_t count = std::min(slot_bytes_, data.size() - begin);
    if (rank() == root) std::memcpy(slot(root), data.data() + begin, count);
    arrive_and_wait("broadcast", count);
    if (rank() != root) std::memcpy(data.data() + begin, slot(root), count);
    next_operation();
    begin += slot_bytes_;
  } while (begin < data.size());
}

void ShmCommunicator::barrier() {
  throw_if_failed("barrier");
  arrive_and_wait("barrier", 0);
  next_operation();
}

void ShmCommunicator::all_to_all_v(std::span<const std::byte> send, std::span<const std::size_t> send_counts,
                                   std::span<const std::size_t> send_offsets, std::span<std::byte> recv,
                                   std::span<const std::size_t> recv_counts,
                                   std::span<const std::size_t> recv_offsets) {
  mpi_->all_to_all_v(send, send_counts, send_offsets, recv, recv_counts, recv_offsets);
}

void ShmCommunicator::send(std::span<const std::byte> data, int dest, int tag) { mpi_->send(data, dest, tag); }

void ShmCommunicator::recv(std::span<std::byte> data, int source, int tag) { mpi_->recv(data, source, tag); }

std::unique_ptr<Communicator> ShmCommunicator::split(int color, int key, const std::string& label) {
  throw_if_failed("split");
  // Everyone arrives here first, so the MPI half's messages never overtake an unfinished shm op.
  barrier();
  return make_group_communicator(mpi_->split_mpi(color, key, label));
}

}  // namespace lemma::dist
