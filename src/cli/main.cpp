// The `lemma` command: one subcommand per file (cmd_*.cpp), registered here.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "lemma/base/error.h"
#include "lemma/base/logging.h"

int main(int argc, char** argv) {
  lemma::configure_logging(spdlog::level::warn);
  CLI::App app{"lemma: an LLM inference and serving engine for CPUs"};
  app.require_subcommand(1);
  lemma::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return lemma::cli::run_selected(app);
  } catch (const lemma::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 2;
  }
}
