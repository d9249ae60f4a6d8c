// The runtime flags of every command (--isa, --matmul-precision, --interleave, --decode-plans,
// --pin-threads) and their LEMMA_* variables, read by the CLI and nowhere else: bad values fail before
// any work with a message naming the flag and the variable; good ones change what runs, not the tokens.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

CommandResult generate(const std::string& prefix, const std::string& flags) {
  return run_command(prefix + shell_quote(LEMMA_BINARY) + " generate --json --temperature 0 --ignore-eos --max-tokens 12 " +
                     "--prompt-ids 1,403,407,261,378 --model " + shell_quote(stories()) + " " + flags);
}

TEST(RuntimeFlagsCli, BadValuesNameTheFlagAndTheVariable) {
  LEMMA_REQUIRE_SHARED(stories());
  auto r = generate("LEMMA_ISA=sse9 ", "");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--isa (LEMMA_ISA) sse9 is not one of amx, avx512, avx2, scalar"), std::string::npos) << r.err;
  r = generate("", "--matmul-precision int3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--matmul-precision (LEMMA_MATMUL_PRECISION) int3 is not one of f32, auto"), std::string::npos)
      << r.err;
  r = generate("", "--isa amx");  // runs on an AMX machine; elsewhere a clear refusal
  if (r.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--isa (LEMMA_ISA) amx but this machine supports at most"), std::string::npos) << r.err;
  }
}

// Every setting gives the same greedy tokens (the kernels' rounding differs, not the argmax here),
// and the chosen ISA is what the load logs.
TEST(RuntimeFlagsCli, SettingsFromFlagsOrVariablesChangeWhatRunsNotTheTokens) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto base = generate("", "");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const auto ids = nlohmann::json::parse(base.out)["ids"];
  for (const std::string& variant :
       {std::string("--isa scalar"), std::string("--matmul-precision f32"), std::string("--interleave 0"),
        std::string("--decode-plans 0"), std::string("--pin-threads 0")}) {
    const auto r = generate("LEMMA_LOG_LEVEL=info ", variant);
    ASSERT_EQ(r.exit_code, 0) << variant << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], ids) << variant;
  }
  const auto scalar = generate("LEMMA_LOG_LEVEL=info LEMMA_ISA=scalar ", "");
  ASSERT_EQ(scalar.exit_code, 0) << scalar.err;
  EXPECT_NE(scalar.err.find("kernels: ISA scalar (detected"), std::string::npos) << scalar.err;
  EXPECT_NE(scalar.err.find("chosen by --isa or LEMMA_ISA"), std::string::npos) << scalar.err;
}

}  // namespace
}  // namespace lemma::testing
