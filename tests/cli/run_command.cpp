#include "run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/shared_data.h"

namespace lemma::testing {

std::string shell_quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CommandResult run_command(const std::string& command_line, const std::string* stdin_text) {
  static int counter = 0;
  const auto dir = build_scratch("cli");
  const std::string stem = (dir / ("cmd" + std::to_string(::getpid()) + "_" + std::to_string(counter++))).string();
  std::string line = command_line + " >" + shell_quote(stem + ".out") + " 2>" + shell_quote(stem + ".err");
  if (stdin_text) {
    std::ofstream(stem + ".in", std::ios::binary) << *stdin_text;
    line += " <" + shell_quote(stem + ".in");
  } else {
    line += " </dev/null";
  }
  CommandResult result;
  const int status = std::system(line.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(stem + ".out");
  result.err = read_file(stem + ".err");
  for (const char* ext : {".out", ".err", ".in"}) std::filesystem::remove(stem + ext);
  return result;
}

}  // namespace lemma::testing
