// The ISA is the caller's choice (RuntimeOptions::isa): checked_isa refuses what this machine lacks,
// and a matmul under an explicit ISA logs the kernel it resolved. (The CLI's --isa / LEMMA_ISA
// parsing: tests/cli/runtime_flags_cli_test.cpp.)
#include <cstdlib>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/matmul.h"

namespace lemma::kernels {
namespace {

TEST(IsaChoice, CheckedIsaAcceptsWhatTheMachineRunsAndRefusesTheRest) {
  for (Isa isa : available_isas()) EXPECT_EQ(checked_isa(isa), isa);
  if (detected_isa() == Isa::kAmx) GTEST_SKIP() << "this machine runs every ISA";
  try {
    checked_isa(Isa::kAmx);
    FAIL() << "amx accepted on a machine without it";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("at most " + std::string(isa_name(detected_isa()))), std::string::npos)
        << e.what();
  }
}

// In a child process (death-test machinery), so the debug level and the first-use log are its own.
[[noreturn]] void run_logged_scalar_matmul() {
  log().set_level(spdlog::level::debug);
  const float x[4] = {1, 2, 3, 4}, w[8] = {1, 1, 1, 1, 0, 0, 0, 1};
  float y[2] = {};
  matmul(x, 4, 1, TensorView{w, DType::kF32, Shape{2, 4}}, y, 2, nullptr, MatmulOptions{Isa::kScalar});
  std::exit(y[0] == 10.0f && y[1] == 4.0f ? 0 : 1);
}

TEST(IsaChoice, MatmulLogsItsKernelChoiceAtDebugLevel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_logged_scalar_matmul(), ::testing::ExitedWithCode(0),
              "kernels: matmul f32 weights -> reference_f32 \\(ISA scalar\\)");
}

TEST(IsaChoice, AnIsaAboveTheMachinesIsRefusedByMatmul) {
  if (detected_isa() == Isa::kAmx) GTEST_SKIP() << "this machine runs every ISA";
  const float x[4] = {}, w[8] = {};
  float y[2] = {};
  EXPECT_THROW(matmul(x, 4, 1, TensorView{w, DType::kF32, Shape{2, 4}}, y, 2, nullptr, MatmulOptions{Isa::kAmx}),
               InvalidArgument);
}

}  // namespace
}  // namespace lemma::kernels
