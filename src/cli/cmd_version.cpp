#include <cstdio>

#include "cli/commands.h"

namespace lemma::cli {

void register_version(CLI::App& app) {
  auto* sub = app.add_subcommand("version", "Print lemma's version");
  bind(sub, [] {
    std::printf("lemma 0.1.0\n");
    return 0;
  });
}

}  // namespace lemma::cli
