#include "cli/commands.h"

#include <map>

namespace lemma::cli {

namespace {
std::map<CLI::App*, CommandRunner>& runners() {
  static std::map<CLI::App*, CommandRunner> map;
  return map;
}
}  // namespace

void bind(CLI::App* sub, CommandRunner runner) { runners()[sub] = std::move(runner); }

int run_selected(CLI::App& app) {
  // The deepest parsed subcommand runs: `bench model` rather than `bench`.
  for (auto& [sub, runner] : runners())
    if (sub->parsed() && sub->get_subcommands().empty()) return runner();
  return 1;
}

}  // namespace lemma::cli
