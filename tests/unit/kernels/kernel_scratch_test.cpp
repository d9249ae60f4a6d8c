// KernelScratch: aligned, grow-only bytes a caller lends to kernels; and how much the kernels of
// each ISA ask for (KernelSet::scratch_bytes), which callers reserve up front.
#include "lemma/kernels/kernel_scratch.h"

#include <cstdint>
#include <utility>

#include <gtest/gtest.h>

#include "lemma/kernels/kernel_set.h"

namespace lemma::kernels {
namespace {

bool aligned64(const std::byte* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(KernelScratch, GrowsOnlyAndStays64ByteAligned) {
  KernelScratch s;
  EXPECT_EQ(s.capacity(), 0u);
  std::byte* first = s.reserve(1000);
  EXPECT_TRUE(aligned64(first));
  EXPECT_GE(s.capacity(), 1000u);
  EXPECT_EQ(s.reserve(10), first);  // smaller: the same bytes, no allocation
  EXPECT_EQ(s.reserve(1000), first);
  std::byte* grown = s.reserve(100000);
  EXPECT_TRUE(aligned64(grown));
  EXPECT_GE(s.capacity(), 100000u);
  EXPECT_EQ(s.reserve(5000), grown);
}

TEST(KernelScratch, MovesItsBytes) {
  KernelScratch a;
  std::byte* bytes = a.reserve(256);
  KernelScratch b(std::move(a));
  EXPECT_EQ(b.reserve(256), bytes);
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  KernelScratch c;
  c = std::move(b);
  EXPECT_EQ(c.reserve(100), bytes);
}

// Only the AMX kernels stage data in scratch; the others pay nothing.
TEST(KernelScratch, OnlyTheAmxKernelsAskForScratch) {
  EXPECT_EQ(kernel_set(Isa::kScalar).scratch_bytes(), 0u);
  EXPECT_EQ(kernel_set(Isa::kAvx2).scratch_bytes(), 0u);
  EXPECT_EQ(kernel_set(Isa::kAvx512).scratch_bytes(), 0u);
  EXPECT_GE(kernel_set(Isa::kAmx).scratch_bytes(), 320u * 1024);  // the AMX-INT8 panel, the flash tiles
}

}  // namespace
}  // namespace lemma::kernels
