// Progress lines (issue 37 item 4) through the binary: with stderr a file, `perplexity` and
// `quantize` write plain progress lines (no \r, no escapes) to stderr, model loading included, and
// stdout holds exactly the command's results; on a terminal (a pty made by script(1)) the line is
// redrawn in place with \r.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include <unistd.h>

#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }
std::string ppl_input() { return shared_data("golden/ppl-input.txt").string(); }
std::string lemma_command(const std::string& args) { return shell_quote(LEMMA_BINARY) + " " + args; }

void expect_plain(const std::string& err) {
  EXPECT_EQ(err.find('\r'), std::string::npos) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
}

TEST(CliProgress, PerplexityOffATerminalWritesPlainLinesAndLeavesStdoutAlone) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto r = run_command(lemma_command("perplexity --threads 1 --ctx 128 --model " + shell_quote(stories()) +
                                           " --file " + shell_quote(ppl_input())));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_plain(r.err);
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(loading weights: 6/6 layers \(100%\)(, [0-9.]+ layers/s)?, took [0-9.]+s\n)")))
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(perplexity: (\d+)/\1 chunks \(100%\), [0-9.]+ chunks/s, took [0-9.]+s\n)")))
      << r.err;
  // stdout: the results and nothing else, as before progress lines existed.
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(chunks: \d+, scored tokens: \d+\nPPL = [0-9.]+\n)"))) << r.out;
}

TEST(CliProgress, QuantizeOffATerminalKeepsItsTensorLinesAndAddsTheProgressLine) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto out = std::filesystem::temp_directory_path() / ("lemma-progress-" + std::to_string(::getpid()) + ".gguf");
  const auto r = run_command(lemma_command("quantize --type q8_0 --model " + shell_quote(stories()) + " --out " +
                                           shell_quote(out.string())));
  std::filesystem::remove(out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_plain(r.err);
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(\[\s*1/(\d+)\] )"))) << r.err;  // one report line per tensor
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(quantize: (\d+)/\1 tensors \(100%\)(, [0-9.]+ tensors/s)?, took )")))
      << r.err;
  EXPECT_EQ(r.out.find("quantize:"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(tensor bytes: [^\n]+\nfile bytes: [^\n]+\n)"))) << r.out;
}

TEST(CliProgress, OnATerminalTheLineIsRedrawnInPlace) {
  LEMMA_REQUIRE_SHARED(stories());
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "script(1) (util-linux) is not installed";
  // script(1) runs the command on a pseudo-terminal; its stdout goes to a file, stderr stays the pty.
  const auto out = std::filesystem::temp_directory_path() / ("lemma-progress-" + std::to_string(::getpid()) + ".txt");
  const std::string inner = lemma_command("perplexity --threads 1 --ctx 128 --model " + shell_quote(stories()) +
                                          " --file " + shell_quote(ppl_input())) + " > " + shell_quote(out.string());
  const auto r = run_command("script -qec " + shell_quote(inner) + " /dev/null");
  const std::string stdout_text = read_file(out);
  std::filesystem::remove(out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\rperplexity: (\d+)/\1 chunks \(100%\)[^\r\n]*\x1b\[K\r?\n)"))) << r.out;
  EXPECT_EQ(stdout_text.find("perplexity:"), std::string::npos) << stdout_text;
  EXPECT_NE(stdout_text.find("PPL = "), std::string::npos) << stdout_text;
}

}  // namespace
}  // namespace lemma::testing
