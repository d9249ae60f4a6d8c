// `lemma template`: render a chat template exactly as Hugging Face (Jinja2) would.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "lemma/base/error.h"
#include <fmt/format.h>
#include "lemma/tokenizer/jinja/chat_template.h"

namespace lemma::cli {

namespace {
struct TemplateOptions {
  std::string model, template_file, messages_file, tools_file;
  bool add_generation_prompt = false;
  std::optional<std::string> bos_token, eos_token, now;
};

nlohmann::ordered_json read_json_file(const std::string& path, const char* option) {
  const std::string text = read_text_file(path);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    fail<InvalidArgument>("{} {}: invalid JSON: {}", option, path, e.what());
  }
}
}  // namespace

void register_template(CLI::App& app) {
  auto opts = std::make_shared<TemplateOptions>();
  auto* sub = app.add_subcommand("template", "Render a chat template (prints it exactly, no added newline)");
  auto* model = sub->add_option("--model,-m", opts->model, "Model whose chat template to use");
  auto* file = sub->add_option("--template", opts->template_file, "A Jinja chat template file");
  model->excludes(file);
  sub->add_option("--messages", opts->messages_file, "JSON file: an array of messages (or {\"messages\": [...]})")->required();
  sub->add_option("--tools", opts->tools_file, "JSON file: an array of tools");
  sub->add_flag("--add-generation-prompt", opts->add_generation_prompt, "End with the assistant turn's opening");
  sub->add_option("--bos-token", opts->bos_token, "BOS text the template sees (default: the model's)");
  sub->add_option("--eos-token", opts->eos_token, "EOS text the template sees (default: the model's)");
  sub->add_option("--now", opts->now, "Fixed clock for strftime_now, e.g. 2025-01-15T12:00:00");
  bind(sub, [opts] {
    if (opts->model.empty() && opts->template_file.empty())
      fail<InvalidArgument>("template: give --model or --template");
    ChatTemplateInputs inputs;
    std::string source_text, name;
    if (!opts->template_file.empty()) {
      source_text = read_text_file(opts->template_file);
      name = opts->template_file;
    } else {
      const auto source = open_model_source(opts->model);
      auto found = find_chat_template(source);
      if (!found) fail<InvalidArgument>("{}: the model has no chat template; pass --template FILE", opts->model);
      source_text = std::move(*found);
      name = opts->model + " chat_template";
      std::optional<Tokenizer> tokenizer;
      try {
        tokenizer = load_tokenizer(source);
      } catch (const Error&) {
        // A template may be rendered without a tokenizer; the texts then come from tokenizer_config.json only.
      }
      const auto texts = special_token_texts(source, tokenizer ? &*tokenizer : nullptr);
      inputs.bos_token = texts.bos;
      inputs.eos_token = texts.eos;
    }
    if (opts->bos_token) inputs.bos_token = opts->bos_token;
    if (opts->eos_token) inputs.eos_token = opts->eos_token;
    auto messages = read_json_file(opts->messages_file, "--messages");
    if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
    if (!messages.is_array()) fail<InvalidArgument>("--messages {}: expected a JSON array of messages", opts->messages_file);
    inputs.messages = std::move(messages);
    if (!opts->tools_file.empty()) inputs.tools = read_json_file(opts->tools_file, "--tools");
    inputs.add_generation_prompt = opts->add_generation_prompt;
    if (opts->now) inputs.now = parse_local_datetime(*opts->now, "--now");
    const ChatTemplate chat_template(source_text, name);
    const std::string out = chat_template.render(inputs);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  });
}

}  // namespace lemma::cli
