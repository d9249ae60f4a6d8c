// LEMMA_ISA: each case runs in a fresh child process (death-test machinery, "threadsafe" style
// re-executes the binary) because the active ISA is decided once per process.
#include <cstdlib>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/registry.h"

namespace lemma::kernels {
namespace {

class IsaEnv : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(IsaEnv, ForcedScalarIsUsedAndLogged) {
  EXPECT_EXIT(
      {
        setenv("LEMMA_ISA", "scalar", 1);
        log().set_level(spdlog::level::info);
        const bool ok = active_isa() == Isa::kScalar && kernel_name_for(DType::kF32, 64) == "reference_f32";
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "kernels: ISA scalar \\(detected [a-z0-9]+, forced by LEMMA_ISA\\)");
}

[[noreturn]] void run_logged_matmul() {
  setenv("LEMMA_ISA", "scalar", 1);
  log().set_level(spdlog::level::debug);
  const float x[4] = {1, 2, 3, 4}, w[8] = {1, 1, 1, 1, 0, 0, 0, 1};
  float y[2] = {};
  matmul(x, 4, 1, TensorView{w, DType::kF32, Shape{2, 4}}, y, 2);
  std::exit(y[0] == 10.0f && y[1] == 4.0f ? 0 : 1);
}

TEST_F(IsaEnv, MatmulLogsItsKernelChoiceAtDebugLevel) {
  EXPECT_EXIT(run_logged_matmul(), ::testing::ExitedWithCode(0),
              "kernels: matmul f32 weights -> reference_f32 \\(ISA scalar\\)");
}

TEST_F(IsaEnv, DefaultIsDetected) {
  EXPECT_EXIT(
      {
        unsetenv("LEMMA_ISA");
        std::exit(active_isa() == detected_isa() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(IsaEnv, UnknownNameThrowsInvalidArgument) {
  EXPECT_EXIT(
      {
        setenv("LEMMA_ISA", "sse9", 1);
        try {
          active_isa();
        } catch (const InvalidArgument&) {
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "");
}

TEST_F(IsaEnv, UnavailableIsaThrowsUnsupported) {
  if (detected_isa() == Isa::kAmx) GTEST_SKIP() << "this machine runs every ISA";
  EXPECT_EXIT(
      {
        setenv("LEMMA_ISA", "amx", 1);
        try {
          active_isa();
        } catch (const Unsupported&) {
          std::exit(4);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(4), "");
}

}  // namespace
}  // namespace lemma::kernels
