// Runs the real `lemma` binary (LEMMA_BINARY) for the CLI-level quant tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/shared_data.h"

namespace lemma::quant {

struct Run {
  int exit_code = -1;
  std::string out;  // stdout; stderr goes to `err_path`
  std::string err;
};

// Runs `lemma <args>` (arguments are paths and words without quotes or spaces).
inline Run lemma(const std::string& args) {
  // One stderr file per process and call: CTest runs these tests in parallel processes.
  static int calls = 0;
  const std::filesystem::path err_path =
      lemma::testing::build_scratch("quant") / ("cli-stderr-" + std::to_string(::getpid()) + "-" + std::to_string(++calls) + ".txt");
  const std::string cmd = std::string(LEMMA_BINARY) + " " + args + " 2> " + err_path.string();
  Run run;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = lemma::testing::read_file(err_path);
  std::filesystem::remove(err_path);
  return run;
}

// The value after the last "PPL = " in `lemma perplexity` output; NaN when absent.
inline double ppl_of(const Run& run) {
  const auto at = run.out.rfind("PPL = ");
  return at == std::string::npos ? std::nan("") : std::strtod(run.out.c_str() + at + 6, nullptr);
}

// stories260K's perplexity on golden/ppl-input.txt (ctx 128) with f32 weights and K/V.
inline constexpr double kF32Perplexity = 109.6400;

}  // namespace lemma::quant
