// Linear groups on a team (G21): guided row tiles cover the row space once, in aligned tiles that
// shrink to the minimum (so threads finish within a small tile of each other), and a group run on
// teams of any size gives the bits of the inline run, with tiles crossing from one matrix into the
// next and matrices whose row counts are not whole 16-row groups.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/model/layers/linear.h"
#include "lemma/model/layers/row_tiles.h"
#include "lemma/model/thread_team.h"

namespace lemma::layers {
namespace {

TEST(RowTiles, GuidedTilesCoverTheRowsOnceAndShrinkToTheMinimum) {
  for (int64_t threads : {2, 3, 8}) {
    for (int64_t rows : {0, 16, 80, 1152, 9728, 151936}) {
      for (int64_t min_rows : {16, 80}) {
        const RowTiles t = guided_row_tiles(rows, threads, min_rows, 16);
        SCOPED_TRACE(::testing::Message() << "threads=" << threads << " rows=" << rows << " min=" << min_rows);
        ASSERT_LE(t.count, RowTiles::kMaxTiles);
        ASSERT_EQ(t.count == 0, rows == 0);
        EXPECT_EQ(t.start[0], 0);
        EXPECT_EQ(t.start[static_cast<size_t>(t.count)], rows);
        for (int64_t i = 0; i < t.count; ++i) {
          const int64_t size = t.start[static_cast<size_t>(i) + 1] - t.start[static_cast<size_t>(i)];
          ASSERT_GT(size, 0);
          ASSERT_EQ(t.start[static_cast<size_t>(i)] % 16, 0);
          if (i + 1 < t.count) {
            EXPECT_GE(size, min_rows);
            EXPECT_LE(t.start[static_cast<size_t>(i) + 2] - t.start[static_cast<size_t>(i) + 1], size);  // never growing
          }
        }
        if (t.count > 1) {
          // The first tile is about 1 / (2 threads) of the rows; the last one at most the minimum
          // or a share of what was left, so no thread waits long for another.
          EXPECT_LE(t.start[1], (rows + 2 * threads - 1) / (2 * threads) + 15 + min_rows);
          const int64_t last = rows - t.start[static_cast<size_t>(t.count) - 1];
          EXPECT_LE(last, std::max<int64_t>(min_rows, rows / 32)) << "tiles " << t.count;
        }
      }
    }
  }
  // Many threads, many small groups: still within the table.
  for (int64_t threads : {64, 200}) {
    const RowTiles t = guided_row_tiles(16 * 100000, threads, 16, 16);
    EXPECT_LE(t.count, RowTiles::kMaxTiles);
    EXPECT_EQ(t.start[static_cast<size_t>(t.count)], 16 * 100000);
  }
}

// q/k/v-like outputs (row counts 100, 48, 37: tiles cross matrix edges, two matrices end inside a
// 16-row group) in f32 and interleaved bf16x16: a team of 2, 3 or 4 threads
// gives the inline run's bits.
TEST(LinearGroup, TeamsGiveTheInlineBitsAcrossMatrixEdges) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t M = 3, K = 64;
  const int64_t rows[] = {100, 48, 37};
  for (DType dtype : {DType::kF32, DType::kBF16x16}) {
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<TensorView> weights;
    for (int64_t N : rows) {
      std::vector<float> w(static_cast<size_t>(N * K));
      for (auto& v : w) v = dist(rng);
      if (dtype == DType::kF32) {
        bytes.emplace_back(w.size() * 4);
        std::memcpy(bytes.back().data(), w.data(), w.size() * 4);
      } else {
        std::vector<uint16_t> plain(w.size());
        for (size_t i = 0; i < w.size(); ++i) plain[i] = kernels::f32_to_bf16(w[i]);
        bytes.emplace_back(kernels::interleaved_bytes(DType::kBF16, N, K) + 64);
        auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(bytes.back().data()) + 63) / 64 * 64);
        kernels::interleave_rows(DType::kBF16, plain.data(), N, K, aligned);
      }
    }
    for (size_t i = 0; i < bytes.size(); ++i) {
      void* data = bytes[i].data();
      if (dtype != DType::kF32) data = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(data) + 63) / 64 * 64);
      weights.push_back(TensorView{data, dtype, Shape{rows[i], K}});
    }
    std::vector<float> x(static_cast<size_t>(M * K));
    for (auto& v : x) v = dist(rng);
    const auto run = [&](ThreadTeam* team) {
      std::vector<std::vector<float>> ys;
      std::vector<LinearOutput> outputs;
      for (int64_t N : rows) ys.emplace_back(static_cast<size_t>(M * N), -1.0f);
      for (size_t i = 0; i < ys.size(); ++i) outputs.push_back({&weights[i], {}, ys[i]});
      linear_group(x, M, outputs, team);
      return ys;
    };
    const auto want = run(nullptr);
    for (int threads : {2, 3, 4}) {
      ThreadTeam team(threads);
      const auto got = run(&team);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4), 0) << dtype_name(dtype) << " " << threads << " threads, output " << i;
    }
  }
}

}  // namespace
}  // namespace lemma::layers
