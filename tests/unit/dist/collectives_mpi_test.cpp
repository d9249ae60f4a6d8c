// Every collective of the world's backend (MPI or shared memory, by --transport) against a serial
// reference, bit for bit, for sizes 0, 1, odd and large (several chunks and several shared-memory
// slots); sub-groups; repeatability; and the shared-memory backend against the MPI one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "lemma/dist/parallel_config.h"
#include "unit/dist/mpi_test_world.h"
#include "unit/dist/test_values.h"

namespace lemma::dist {
namespace {

using testing::reference_reduce;
using testing::test_value;
using testing::test_vector;
using testing::test_world;

// 0 and 1; odd; just above the MPI one-round threshold (64 KiB) and several 64 KiB shm slots.
const std::size_t kSizes[] = {0, 1, 3, 1001, 16411, 70001};

std::vector<int> all_ranks(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Collectives, BackendIsTheOneAsked) {
  const std::string name = test_world().comm().name();
  if (test_world().comm().size() == 1) GTEST_SKIP() << "one rank";
  if (testing::test_transport() == Transport::kMpi) {
    EXPECT_NE(name.find("(mpi)"), std::string::npos) << name;
  }
  if (testing::test_transport() == Transport::kShm) {
    EXPECT_NE(name.find("(shm)"), std::string::npos) << name;
  }
}

TEST(Collectives, AllReduceSumAndMaxEqualTheRankOrderReference) {
  Communicator& comm = test_world().comm();
  for (std::size_t n : kSizes) {
    for (bool max : {false, true}) {
      auto data = test_vector(comm.rank(), n);
      comm.all_reduce(data, max ? ReduceOp::kMax : ReduceOp::kSum);
      EXPECT_TRUE(same_bits(data, reference_reduce(all_ranks(comm.size()), n, max))) << "n=" << n << " max=" << max;
    }
  }
}

TEST(Collectives, AllReduceGivesTheSameBitsEveryTime) {
  Communicator& comm = test_world().comm();
  const auto first = [&] {
    auto v = test_vector(comm.rank(), 16411, 5);
    comm.all_reduce(v);
    return v;
  }();
  for (int run = 0; run < 5; ++run) {
    auto v = test_vector(comm.rank(), 16411, 5);
    comm.all_reduce(v);
    EXPECT_TRUE(same_bits(v, first)) << "run " << run;
  }
}

TEST(Collectives, AllGatherIsRankMajor) {
  Communicator& comm = test_world().comm();
  for (std::size_t n : kSizes) {
    const auto mine = test_vector(comm.rank(), n);
    std::vector<float> gathered(n * static_cast<std::size_t>(comm.size()), -1.0f);
    comm.all_gather(mine, gathered);
    std::vector<float> want;
    for (int r = 0; r < comm.size(); ++r) {
      const auto v = test_vector(r, n);
      want.insert(want.end(), v.begin(), v.end());
    }
    EXPECT_TRUE(same_bits(gathered, want)) << "n=" << n;
  }
}

TEST(Collectives, ReduceScatterKeepsThisRanksBlockOfTheSum) {
  Communicator& comm = test_world().comm();
  const auto p = static_cast<std::size_t>(comm.size());
  for (std::size_t m : kSizes) {
    const auto input = test_vector(comm.rank(), m * p);
    std::vector<float> out(m, -1.0f);
    comm.reduce_scatter(input, out);
    const auto sum = reference_reduce(all_ranks(comm.size()), m * p, false);
    const std::vector<float> want(sum.begin() + static_cast<std::ptrdiff_t>(m * static_cast<std::size_t>(comm.rank())),
                                  sum.begin() + static_cast<std::ptrdiff_t>(m * static_cast<std::size_t>(comm.rank() + 1)));
    EXPECT_TRUE(same_bits(out, want)) << "m=" << m;
  }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  Communicator& comm = test_world().comm();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{200003}}) {
    for (int root = 0; root < comm.size(); ++root) {
      std::vector<std::byte> data(n);
      for (std::size_t i = 0; i < n; ++i) {
        data[i] = comm.rank() == root ? static_cast<std::byte>((i * 31 + static_cast<std::size_t>(root)) & 0xff) : std::byte{0};
      }
      comm.broadcast(data, root);
      bool ok = true;
      for (std::size_t i = 0; i < n; ++i) ok &= data[i] == static_cast<std::byte>((i * 31 + static_cast<std::size_t>(root)) & 0xff);
      EXPECT_TRUE(ok) << "n=" << n << " root=" << root;
    }
  }
}

TEST(Collectives, AllToAllVWithUnevenAndEmptyBlocks) {
  Communicator& comm = test_world().comm();
  const int n = comm.size(), me = comm.rank();
  // Rank s sends (s + 2 * d) % 5 bytes to rank d (some blocks empty), each byte naming s, d and i.
  auto count = [](int s, int d) { return static_cast<std::size_t>((s + 2 * d) % 5); };
  auto byte = [](int s, int d, std::size_t i) { return static_cast<std::byte>(s * 50 + d * 7 + static_cast<int>(i)); };
  std::vector<std::size_t> send_counts, send_offsets, recv_counts, recv_offsets;
  std::vector<std::byte> send, recv;
  for (int d = 0; d < n; ++d) {
    send_offsets.push_back(send.size());
    send_counts.push_back(count(me, d));
    for (std::size_t i = 0; i < count(me, d); ++i) send.push_back(byte(me, d, i));
    recv_offsets.push_back(recv.size() + 1);  // a gap: offsets are honoured, not assumed packed
    recv_counts.push_back(count(d, me));
    recv.resize(recv.size() + 1 + count(d, me), std::byte{0xee});
  }
  comm.all_to_all_v(send, send_counts, send_offsets, recv, recv_counts, recv_offsets);
  for (int s = 0; s < n; ++s) {
    for (std::size_t i = 0; i < count(s, me); ++i) {
      EXPECT_EQ(recv[recv_offsets[static_cast<std::size_t>(s)] + i], byte(s, me, i)) << "from " << s << " byte " << i;
    }
    EXPECT_EQ(recv[recv_offsets[static_cast<std::size_t>(s)] - 1], std::byte{0xee}) << "gap before " << s;
  }
}

TEST(Collectives, SendRecvAroundTheRing) {
  Communicator& comm = test_world().comm();
  if (comm.size() == 1) GTEST_SKIP() << "one rank";
  const int next = (comm.rank() + 1) % comm.size(), prev = (comm.rank() + comm.size() - 1) % comm.size();
  std::vector<float> out = test_vector(comm.rank(), 1000, 9), in(1000);
  const auto bytes = [](std::vector<float>& v) { return std::as_writable_bytes(std::span<float>(v)); };
  // Even ranks send first, odd ranks receive first: blocking send/recv without a deadlock.
  if (comm.rank() % 2 == 0) {
    comm.send(bytes(out), next, 3);
    comm.recv(bytes(in), prev, 3);
  } else {
    comm.recv(bytes(in), prev, 3);
    comm.send(bytes(out), next, 3);
  }
  EXPECT_TRUE(same_bits(in, test_vector(prev, 1000, 9)));
  comm.barrier();
}

TEST(Collectives, BadArgumentsAreInvalidArgumentBeforeAnyMessage) {
  Communicator& comm = test_world().comm();
  std::vector<float> mine(3), wrong(3 * static_cast<std::size_t>(comm.size()) + 1);
  EXPECT_THROW(comm.all_gather(mine, wrong), InvalidArgument);
  std::vector<std::byte> data(4);
  EXPECT_THROW(comm.broadcast(data, comm.size()), InvalidArgument);
  EXPECT_THROW(comm.send(data, -1, 0), InvalidArgument);
  // Nothing was sent: the group still works.
  std::vector<float> v = test_vector(comm.rank(), 5);
  comm.all_reduce(v);
  EXPECT_TRUE(same_bits(v, reference_reduce(all_ranks(comm.size()), 5, false)));
}

TEST(SubGroups, EvenAndOddRanksReduceAmongThemselves) {
  Communicator& world = test_world().comm();
  auto group = world.split(world.rank() % 2, world.rank(), "parity");
  std::vector<int> members;
  for (int r = world.rank() % 2; r < world.size(); r += 2) members.push_back(r);
  ASSERT_EQ(group->size(), static_cast<int>(members.size()));
  EXPECT_EQ(members[static_cast<std::size_t>(group->rank())], world.rank());
  for (std::size_t n : kSizes) {
    auto v = test_vector(world.rank(), n, 2);
    group->all_reduce(v);
    EXPECT_TRUE(same_bits(v, reference_reduce(members, n, false, 2))) << "n=" << n;
  }
  // The key orders the new group: reversed keys give reversed ranks (and reduction order).
  auto reversed = world.split(0, world.size() - world.rank(), "reversed");
  EXPECT_EQ(reversed->rank(), world.size() - 1 - world.rank());
  auto v = test_vector(world.rank(), 1001, 4);
  reversed->all_reduce(v);
  std::vector<int> order = all_ranks(world.size());
  std::reverse(order.begin(), order.end());
  EXPECT_TRUE(same_bits(v, reference_reduce(order, 1001, false, 4)));
}

TEST(SubGroups, ParallelConfigGroupsHaveTheirRanks) {
  Communicator& world = test_world().comm();
  if (world.size() % 2 != 0) GTEST_SKIP() << "needs an even world";
  const ParallelConfig config{2, 1, 1, world.size() / 2};
  auto groups = make_process_groups(world, config);
  const auto c = coordinates_of(config, world.rank());
  EXPECT_EQ(groups.tp->size(), 2);
  EXPECT_EQ(groups.tp->rank(), c.tp);
  EXPECT_EQ(groups.dp->size(), world.size() / 2);
  EXPECT_EQ(groups.dp->rank(), c.dp);
  EXPECT_EQ(groups.pp->size(), 1);
  EXPECT_EQ(groups.ep->size(), 1);
  EXPECT_NE(groups.tp->name().find("tp"), std::string::npos);
  // TP partners are world ranks 2k and 2k+1.
  auto v = test_vector(world.rank(), 777);
  groups.tp->all_reduce(v);
  const int base = world.rank() - c.tp;
  EXPECT_TRUE(same_bits(v, reference_reduce({base, base + 1}, 777, false)));
  EXPECT_THROW(make_process_groups(world, ParallelConfig{world.size() + 1, 1, 1, 1}), InvalidArgument);
}

TEST(Backends, SharedMemoryAndMpiGiveTheSameBits) {
  if (!test_world().uses_mpi()) GTEST_SKIP() << "not under mpirun";
  auto mpi = test_world().make_group(Transport::kMpi, "cmp-mpi");
  auto shm = test_world().make_group(Transport::kShm, "cmp-shm");
  ASSERT_NE(mpi->name().find("(mpi)"), std::string::npos);
  ASSERT_NE(shm->name().find("(shm)"), std::string::npos);
  for (std::size_t n : kSizes) {
    auto a = test_vector(mpi->rank(), n, 7), b = a;
    mpi->all_reduce(a);
    shm->all_reduce(b);
    EXPECT_TRUE(same_bits(a, b)) << "all_reduce n=" << n;
    const auto p = static_cast<std::size_t>(mpi->size());
    const auto input = test_vector(mpi->rank(), n * p, 8);
    std::vector<float> ra(n), rb(n);
    mpi->reduce_scatter(input, ra);
    shm->reduce_scatter(input, rb);
    EXPECT_TRUE(same_bits(ra, rb)) << "reduce_scatter n=" << n;
  }
}

}  // namespace
}  // namespace lemma::dist
