// ThreadCommunicator (in-process ranks): every collective against a serial reference over sizes 0,
// 1, odd and large and group sizes 1-4, bitwise (sums in rank order), plus the failure paths: sizes
// that disagree, a rank that never arrives (an error naming it, not a hang), mismatched operations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>

#include "run_ranks.h"

namespace lemma::testing {
namespace {

using dist::Communicator;

// Rank r's input of n floats, spread over magnitudes so that the order of a sum shows in its bits.
std::vector<float> input_of(int rank, size_t n) {
  std::mt19937 rng(static_cast<uint32_t>(1000 * rank + n));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = u(rng) * std::pow(10.0f, static_cast<float>(static_cast<int>(i % 7) - 3));
  return x;
}

std::vector<float> serial_sum(int size, size_t n) {
  std::vector<float> sum = input_of(0, n);
  for (int r = 1; r < size; ++r) {
    const std::vector<float> x = input_of(r, n);
    for (size_t i = 0; i < n; ++i) sum[i] += x[i];
  }
  return sum;
}

void expect_no_errors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllReduceSumIsTheRankOrderSerialSumBitwise) {
  const int size = GetParam();
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4099}}) {
    const std::vector<float> want = serial_sum(size, n);
    expect_no_errors(run_ranks(size, [&](Communicator& c) {
      std::vector<float> x = input_of(c.rank(), n);
      c.all_reduce(x);
      ASSERT_EQ(0, std::memcmp(x.data(), want.data(), n * sizeof(float))) << "rank " << c.rank() << " n " << n;
    }));
  }
}

TEST_P(Collectives, AllReduceMax) {
  const int size = GetParam();
  std::vector<float> want = input_of(0, 33);
  for (int r = 1; r < size; ++r) {
    const auto x = input_of(r, 33);
    for (size_t i = 0; i < x.size(); ++i) want[i] = std::max(want[i], x[i]);
  }
  expect_no_errors(run_ranks(size, [&](Communicator& c) {
    std::vector<float> x = input_of(c.rank(), 33);
    c.all_reduce(x, dist::ReduceOp::kMax);
    EXPECT_EQ(x, want);
  }));
}

TEST_P(Collectives, AllGatherIsRankMajor) {
  const int size = GetParam();
  for (size_t n : {size_t{0}, size_t{5}, size_t{1000}}) {
    std::vector<float> want;
    for (int r = 0; r < size; ++r) {
      const auto x = input_of(r, n);
      want.insert(want.end(), x.begin(), x.end());
    }
    expect_no_errors(run_ranks(size, [&](Communicator& c) {
      std::vector<float> gathered(n * static_cast<size_t>(size), -1.0f);
      c.all_gather(input_of(c.rank(), n), gathered);
      EXPECT_EQ(gathered, want);
    }));
  }
}

TEST_P(Collectives, ReduceScatterKeepsEachRanksBlockOfTheSum) {
  const int size = GetParam();
  const size_t block = 9;
  const std::vector<float> sum = serial_sum(size, block * static_cast<size_t>(size));
  expect_no_errors(run_ranks(size, [&](Communicator& c) {
    std::vector<float> out(block);
    c.reduce_scatter(input_of(c.rank(), block * static_cast<size_t>(size)), out);
    const auto first = sum.begin() + static_cast<ptrdiff_t>(block * static_cast<size_t>(c.rank()));
    EXPECT_TRUE(std::equal(out.begin(), out.end(), first)) << "rank " << c.rank();
  }));
}

TEST_P(Collectives, BroadcastFromEveryRoot) {
  const int size = GetParam();
  for (int root = 0; root < size; ++root)
    expect_no_errors(run_ranks(size, [&](Communicator& c) {
      std::vector<std::byte> data(13, std::byte{static_cast<unsigned char>(c.rank())});
      c.broadcast(data, root);
      for (std::byte b : data) ASSERT_EQ(static_cast<int>(b), root);
    }));
}

TEST_P(Collectives, AllToAllVMovesEachPairsBytes) {
  const int size = GetParam();
  const auto n = static_cast<size_t>(size);
  // Rank s sends (s + d) bytes of value 16 s + d to rank d.
  expect_no_errors(run_ranks(size, [&](Communicator& c) {
    const auto me = static_cast<size_t>(c.rank());
    std::vector<size_t> send_counts(n), send_offsets(n), recv_counts(n), recv_offsets(n);
    std::vector<std::byte> send;
    for (size_t d = 0; d < n; ++d) {
      send_offsets[d] = send.size();
      send_counts[d] = me + d;
      send.insert(send.end(), me + d, std::byte{static_cast<unsigned char>(16 * me + d)});
    }
    size_t total = 0;
    for (size_t s = 0; s < n; ++s) {
      recv_offsets[s] = total;
      recv_counts[s] = s + me;
      total += s + me;
    }
    std::vector<std::byte> recv(total);
    c.all_to_all_v(send, send_counts, send_offsets, recv, recv_counts, recv_offsets);
    for (size_t s = 0; s < n; ++s)
      for (size_t i = 0; i < recv_counts[s]; ++i)
        ASSERT_EQ(static_cast<size_t>(recv[recv_offsets[s] + i]), 16 * s + me) << "from " << s;
  }));
}

TEST_P(Collectives, SendRecvAroundTheRing) {
  const int size = GetParam();
  expect_no_errors(run_ranks(size, [&](Communicator& c) {
    const int next = (c.rank() + 1) % size, prev = (c.rank() + size - 1) % size;
    const std::vector<std::byte> out(5, std::byte{static_cast<unsigned char>(c.rank())});
    c.send(out, next, 7);
    std::vector<std::byte> in(5);
    c.recv(in, prev, 7);
    for (std::byte b : in) ASSERT_EQ(static_cast<int>(b), prev);
    c.barrier();
  }));
}

TEST_P(Collectives, SplitByParityOrderedByKey) {
  const int size = GetParam();
  expect_no_errors(run_ranks(size, [&](Communicator& c) {
    // Reverse order inside each group: key = -rank.
    auto sub = c.split(c.rank() % 2, -c.rank(), "parity");
    const int members = (size - c.rank() % 2 + 1) / 2;
    ASSERT_EQ(sub->size(), members);
    EXPECT_EQ(sub->rank(), members - 1 - c.rank() / 2);
    EXPECT_NE(sub->name().find("parity"), std::string::npos);
    std::vector<float> x{static_cast<float>(c.rank())};
    sub->all_reduce(x);
    float want = 0;
    for (int r = c.rank() % 2; r < size; r += 2) want += static_cast<float>(r);
    EXPECT_EQ(x[0], want);
  }));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Collectives, ::testing::Values(1, 2, 3, 4));

TEST(ThreadCommunicator, SizesThatDisagreeFailOnEveryRankNamingTheRank) {
  const auto errors = run_ranks(3, [](Communicator& c) {
    std::vector<float> x(c.rank() == 2 ? 5 : 4);
    c.all_reduce(x);
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("rank 2 gave 5 elements"), std::string::npos) << e;
}

TEST(ThreadCommunicator, AnAbsentRankIsAnErrorNamingItWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto errors = run_ranks(
      3,
      [](Communicator& c) {
        if (c.rank() == 1) return;  // "dies" before the collective
        std::vector<float> x(8);
        c.all_reduce(x);
      },
      {.label = "tp", .timeout = std::chrono::milliseconds(200)});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(errors[1], "");
  for (int r : {0, 2}) {
    EXPECT_NE(errors[static_cast<size_t>(r)].find("rank(s) 1 did not arrive"), std::string::npos) << errors[static_cast<size_t>(r)];
    EXPECT_NE(errors[static_cast<size_t>(r)].find("'tp'"), std::string::npos);
  }
}

TEST(ThreadCommunicator, DifferentOperationsAreAnError) {
  const auto errors = run_ranks(2, [](Communicator& c) {
    std::vector<float> x(4);
    if (c.rank() == 0) {
      c.all_reduce(x);
    } else {
      c.barrier();
    }
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("called"), std::string::npos) << e;
}

TEST(ThreadCommunicator, RejectsAnEmptyGroup) {
  EXPECT_THROW(dist::ThreadCommunicator::create_group(0), InvalidArgument);
}

}  // namespace
}  // namespace lemma::testing
