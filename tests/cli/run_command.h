// Runs a command line (through /bin/sh) and captures stdout, stderr and the exit code.
#pragma once

#include <string>

namespace lemma::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `stdin_text`, when given, is written to the command's standard input.
CommandResult run_command(const std::string& command_line, const std::string* stdin_text = nullptr);

// Quotes `arg` for /bin/sh.
std::string shell_quote(const std::string& arg);

}  // namespace lemma::testing
