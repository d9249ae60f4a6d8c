// Prints, once per run of the binary, which hardware paths ran (a gtest global environment), and
// records the same line as a test property (in ctest's and the XML report's output).
#include "hardware_paths.h"

#include <cstdio>

#include <gtest/gtest.h>

#include "lemma/kernels/isa.h"

namespace lemma::kernels::testing {

namespace {

std::string yes_no(bool has) { return has ? "yes" : "no"; }

class HardwarePathsReport : public ::testing::Environment {
 public:
  void SetUp() override { std::printf("%s\n", hardware_paths_line().c_str()); }
};

const ::testing::Environment* const kReport = ::testing::AddGlobalTestEnvironment(new HardwarePathsReport);

}  // namespace

std::string hardware_paths_line() {
  const CpuFeatures& f = cpu_features();
  std::string line = "hardware paths: avx2 " + yes_no(f.avx2) + ", avx512 " + yes_no(f.avx512) + ", avx512_vnni " +
                     yes_no(f.avx512_vnni) + ", avx512_bf16 " + yes_no(f.avx512_bf16);
  if (!f.avx512_bf16) {
    line += f.avx2 ? " (the bf16x16 matmul's bits ran through its AVX2 twin; the vdpbf16ps kernels did not run)"
                   : " (the vdpbf16ps kernels and their AVX2 twin did not run)";
  }
  line += ", amx " + yes_no(f.amx);
  if (!f.amx) {
    line += f.avx512 ? " (AMX kernels ran on the tile emulator only)"
                     : " (the AMX matmuls ran on the tile emulator only; the AMX flash split, whose emulated twin "
                       "needs AVX-512, did not run)";
  }
  return line;
}

std::string without(const char* feature, const char* instead) {
  return std::string("no ") + feature + " on this CPU: " + instead;
}

TEST(HardwarePaths, SaysWhichRanAndWhatStoodInForTheRest) {
  const std::string line = hardware_paths_line();
  RecordProperty("hardware_paths", line);
  EXPECT_NE(line.find("amx " + yes_no(cpu_features().amx)), std::string::npos) << line;
  if (!cpu_features().amx) EXPECT_NE(line.find("tile emulator"), std::string::npos) << line;
}

}  // namespace lemma::kernels::testing
