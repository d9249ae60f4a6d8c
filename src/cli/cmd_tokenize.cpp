// `lemma tokenize` and `lemma detokenize`.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "lemma/base/error.h"
#include <fmt/format.h>

namespace lemma::cli {

namespace {
struct TokenizeOptions {
  std::string model;
  std::optional<std::string> text;
  bool add_special = false;
  bool parse_special = false;
};
struct DetokenizeOptions {
  std::string model;
  std::string ids;
  bool skip_special = false;
};
}  // namespace

void register_tokenize(CLI::App& app) {
  auto opts = std::make_shared<TokenizeOptions>();
  auto* sub = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  sub->add_option("--model,-m", opts->model, "HF directory, .gguf file, or tokenizer-only holder")->required();
  sub->add_option("--text", opts->text, "Text to tokenise (default: all of standard input, exactly as given)");
  sub->add_flag("--add-special", opts->add_special, "Add BOS/EOS as the model's metadata says");
  sub->add_flag("--parse-special", opts->parse_special, "Match special-token text (e.g. <|im_start|>) as special tokens");
  bind(sub, [opts] {
    const auto source = open_model_source(opts->model);
    const auto tokenizer = load_tokenizer(source);
    const std::string text = opts->text ? *opts->text : read_all_stdin();
    const auto ids = tokenizer.encode(text, opts->add_special, opts->parse_special);
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    return 0;
  });

  auto dopts = std::make_shared<DetokenizeOptions>();
  auto* dsub = app.add_subcommand("detokenize", "Print the text of a list of token ids");
  dsub->add_option("--model,-m", dopts->model, "HF directory, .gguf file, or tokenizer-only holder")->required();
  dsub->add_option("--ids", dopts->ids, "Token ids, e.g. \"1,2,3\"")->required();
  dsub->add_flag("--skip-special", dopts->skip_special, "Leave out special (control) tokens");
  bind(dsub, [dopts] {
    const auto source = open_model_source(dopts->model);
    const auto tokenizer = load_tokenizer(source);
    const auto ids = parse_id_list(dopts->ids, "--ids");
    for (int32_t id : ids)
      if (id >= tokenizer.vocab_size())
        fail<InvalidArgument>("--ids: token id {} is out of range (vocabulary size {})", id, tokenizer.vocab_size());
    const std::string text = tokenizer.decode(ids, dopts->skip_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  });
}

}  // namespace lemma::cli
