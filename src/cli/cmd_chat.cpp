// `lemma chat`: an interactive terminal chat using the model's chat template (ChatML when the
// model has none). Each turn re-renders the whole conversation and generates the reply.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/lora_option.h"
#include "cli/runtime_flags.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/model_source.h"
#include "lemma/base/error.h"
#include "lemma/model/model.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/jinja/default_chat_template.h"
#include "lemma/tokenizer/streaming.h"

namespace lemma::cli {

namespace {
struct ChatOptions {
  std::string model, chat_template_file;
  std::optional<std::string> system;
  SamplingFlags sampling;
  LoraFlags lora;
};

std::string assistant_reply(const Model& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                            const GenerationOptions& options) {
  StreamingDetokenizer detokenizer(tokenizer, /*skip_special=*/true);
  detokenizer.prime(prompt);
  std::string reply;
  generate(model, prompt, options, [&](int32_t id) {
    if (tokenizer.is_end_of_generation(id)) return true;  // generation stops on it; print nothing
    const std::string piece = detokenizer.push(id);
    reply += piece;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  const std::string rest = detokenizer.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::printf("\n");
  return reply + rest;
}
}  // namespace

void register_chat(CLI::App& app) {
  auto opts = std::make_shared<ChatOptions>();
  auto* sub = app.add_subcommand("chat", "Interactive chat in the terminal (/reset clears, /exit or EOF quits)");
  sub->add_option("--model,-m", opts->model, "HF directory or .gguf file")->required();
  sub->add_option("--chat-template", opts->chat_template_file, "Jinja template file (default: the model's, else ChatML)");
  sub->add_option("--system", opts->system, "System message");
  opts->sampling.add_to(sub);
  opts->lora.add_to(sub, /*select=*/true);
  bind(sub, [opts] {
    const Model model = Model::open(opts->model, parse_load_mode(opts->sampling.load), runtime_options());
    opts->sampling.speculative.target_model = opts->model;  // --speculative-method mtp reads its MTP module
    const auto source = open_model_source(opts->model);
    const Tokenizer tokenizer = load_tokenizer(source);
    std::string template_text;
    if (!opts->chat_template_file.empty()) {
      template_text = read_text_file(opts->chat_template_file);
    } else if (auto found = find_chat_template(source)) {
      template_text = std::move(*found);
    } else {
      template_text = kDefaultChatTemplate;
      std::fprintf(stderr, "(the model has no chat template; using ChatML)\n");
    }
    const ChatTemplate chat_template(template_text, "chat template");
    const auto tokens = special_token_texts(source, &tokenizer);
    GenerationOptions options = opts->sampling.to_options(model.config().vocab_size, model.weights().attention_matrix().dtype);
    if (!options.ignore_eos) options.stop_token_ids = tokenizer.end_of_generation_ids();
    options.lora = opts->lora.selected(model.config());

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    const auto reset = [&] {
      messages = nlohmann::ordered_json::array();
      if (opts->system) messages.push_back({{"role", "system"}, {"content", *opts->system}});
    };
    reset();
    const bool interactive = ::isatty(STDIN_FILENO);
    for (std::string line;;) {
      if (interactive) std::printf("> "), std::fflush(stdout);
      if (!std::getline(std::cin, line) || line == "/exit") break;
      if (line == "/reset") {
        reset();
        continue;
      }
      if (line.empty()) continue;
      messages.push_back({{"role", "user"}, {"content", line}});
      ChatTemplateInputs inputs;
      inputs.messages = messages;
      inputs.add_generation_prompt = true;
      inputs.bos_token = tokens.bos;
      inputs.eos_token = tokens.eos;
      // Typed text never becomes control tokens: only the template's own text is read for them.
      const auto prompt = tokenizer.encode_spans(chat_template.render_spans(inputs), /*add_special=*/false);
      const std::string reply = assistant_reply(model, tokenizer, prompt, options);
      messages.push_back({{"role", "assistant"}, {"content", reply}});
    }
    return 0;
  });
}

}  // namespace lemma::cli
