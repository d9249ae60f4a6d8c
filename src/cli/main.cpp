// The `lemma` command: one subcommand per file (cmd_*.cpp), registered here.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/runtime_flags.h"
#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/base/trace.h"

int main(int argc, char** argv) {
  lemma::configure_logging(spdlog::level::warn);
  CLI::App app{"lemma: an LLM inference and serving engine for CPUs"};
  app.require_subcommand(1);
  // Global options may follow the subcommand (`lemma generate --trace t.json ...`).
  app.fallthrough();
  std::string trace_file;
  app.add_option("--trace", trace_file, "Write a Chrome/Perfetto trace (JSON) of named ranges to FILE at exit")
      ->envname("LEMMA_TRACE");
  lemma::cli::add_runtime_flags(app);
  lemma::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Written when main returns, whatever the exit code.
  std::unique_ptr<lemma::trace::FileSession> trace;
  try {
    if (!trace_file.empty()) trace = std::make_unique<lemma::trace::FileSession>(trace_file);
    lemma::cli::runtime_options();  // a bad --isa or LEMMA_* value fails here, before any work
    return lemma::cli::run_selected(app);
  } catch (const lemma::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 2;
  }
}
