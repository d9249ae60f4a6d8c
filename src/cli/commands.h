// Subcommands of the `lemma` command. Each cmd_<name>.cpp defines one register_<name>() that adds
// its CLI11 subcommand and a callback storing what to run; run_selected() runs the chosen one.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace lemma::cli {

using CommandRunner = std::function<int()>;

// Adds every subcommand to `app`.
void register_commands(CLI::App& app);
// Runs the parsed subcommand; returns the process exit code.
int run_selected(CLI::App& app);
// Called by each register_* to bind `sub` to its runner.
void bind(CLI::App* sub, CommandRunner runner);

}  // namespace lemma::cli
