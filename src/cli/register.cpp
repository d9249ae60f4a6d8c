// The list of subcommands; adding one is a new cmd_<name>.cpp plus one line here.
#include "cli/commands.h"

namespace lemma::cli {

void register_version(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_template(CLI::App& app);
void register_inspect(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_logits(CLI::App& app);
void register_generate(CLI::App& app);
void register_chat(CLI::App& app);
void register_quantize(CLI::App& app);
void register_bench(CLI::App& app);
void register_serve(CLI::App& app);
void register_topology(CLI::App& app);

void register_commands(CLI::App& app) {
  register_version(app);
  register_tokenize(app);
  register_template(app);
  register_inspect(app);
  register_perplexity(app);
  register_logits(app);
  register_generate(app);
  register_chat(app);
  register_quantize(app);
  register_bench(app);
  register_serve(app);
  register_topology(app);
}

}  // namespace lemma::cli
