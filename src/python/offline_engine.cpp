#include "offline_engine.h"

#include <algorithm>
#include <utility>

#include "cli/model_source.h"
#include "lemma/base/error.h"
#include "lemma/tokenizer/jinja/default_chat_template.h"

namespace lemma::python {

struct ModelTexts {
  Tokenizer tokenizer;
  std::string template_text;
  std::optional<std::string> bos, eos;
};

namespace {

ModelTexts open_texts(const std::string& path) {
  const cli::ModelSource source = cli::open_model_source(path);
  Tokenizer tokenizer = cli::load_tokenizer(source);
  const cli::SpecialTokenTexts tokens = cli::special_token_texts(source, &tokenizer);
  std::string text = cli::find_chat_template(source).value_or(kDefaultChatTemplate);
  return {std::move(tokenizer), std::move(text), tokens.bos, tokens.eos};
}

}  // namespace

bool OfflineRequest::finished() const {
  return std::all_of(choices.begin(), choices.end(), [](const CompletionState& c) { return c.finished(); });
}

OfflineEngine::OfflineEngine(const LlmOptions& options) : OfflineEngine(options, open_texts(options.model)) {}

OfflineEngine::OfflineEngine(const LlmOptions& options, ModelTexts texts)
    : options_(options),
      model_(Model::open(options.model, load_mode_of(options), runtime_options_of(options))),
      tokenizer_(std::move(texts.tokenizer)),
      default_template_(std::move(texts.template_text), "chat template"),
      bos_text_(std::move(texts.bos)),
      eos_text_(std::move(texts.eos)) {
  max_model_len_ = resolve_max_model_len(options_, model_.config());
  engine_ = std::make_unique<Engine>(model_, engine_config_of(options_, model_));
}

std::vector<int32_t> OfflineEngine::encode_prompt(std::string_view text) const {
  return tokenizer_.encode(text, /*add_special=*/true, /*parse_special=*/false);
}

OfflineEngine::ChatPrompt OfflineEngine::chat_prompt(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                                const std::optional<std::string>& chat_template) const {
  if (!messages.is_array() || messages.empty()) fail<InvalidArgument>("messages must be a non-empty list of dicts");
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.bos_token = bos_text_;
  inputs.eos_token = eos_text_;
  const ChatTemplate chosen = chat_template ? ChatTemplate(*chat_template, "chat_template") : default_template_;
  const std::vector<TextSpan> spans = chosen.render_spans(inputs);
  ChatPrompt prompt;
  for (const TextSpan& span : spans) prompt.text += span.text;
  prompt.token_ids = tokenizer_.encode_spans(spans, /*add_special=*/false);
  return prompt;
}

RequestId OfflineEngine::add_request(std::vector<int32_t> prompt, const OfflineRequestParams& params) {
  const int64_t room = max_model_len_ - static_cast<int64_t>(prompt.size());
  if (room < 1)
    fail<InvalidArgument>("the prompt has {} tokens, which leaves no room within max_model_len {}", prompt.size(),
                          max_model_len_);
  RequestOptions options;
  options.sampling = params.sampling;
  options.stop.max_tokens = params.max_tokens.value_or(room);
  if (options.stop.max_tokens < 1) fail<InvalidArgument>("max_tokens must be >= 1, got {}", options.stop.max_tokens);
  options.stop.min_tokens = params.min_tokens;
  options.stop.ignore_eos = params.ignore_eos;
  options.stop.eos_token_id = model_.config().eos_token_id.value_or(-1);
  if (!params.ignore_eos) options.stop.stop_token_ids = tokenizer_.end_of_generation_ids();
  options.stop.stop_token_ids.insert(options.stop.stop_token_ids.end(), params.stop_token_ids.begin(),
                                     params.stop_token_ids.end());
  try {
    options.sampling.validate(model_.config().vocab_size);
  } catch (const InvalidArgument& e) {
    fail<InvalidArgument>("SamplingParams: {}", e.what());
  }

  const RequestId id = next_id_;
  engine_->add_request(id, prompt, std::move(options), params.n);  // validates the ids and n first
  next_id_ += static_cast<RequestId>(params.n);
  OfflineRequest request;
  for (int i = 0; i < params.n; ++i)
    request.choices.emplace_back(tokenizer_, prompt, params.stop, params.stop_token_ids, params.skip_special_tokens,
                                 params.sampling.logprobs);
  request.prompt_token_ids = std::move(prompt);
  requests_.emplace(id, std::move(request));
  return id;
}

void OfflineEngine::step() {
  StepReport report = engine_->step();
  for (const EngineOutput& out : report.outputs) {
    const RequestId id = out.output.id - static_cast<RequestId>(out.choice);
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;  // taken (aborted) meanwhile
    CompletionState& choice = it->second.choices.at(static_cast<size_t>(out.choice));
    const bool stopped = choice.append(out.output.new_token_ids, out.output.logprobs);
    if (out.output.finished()) {
      choice.finish(out.output.status, out.error);
    } else if (stopped) {  // a stop string: the engine ends the choice, its later tokens are dropped
      engine_->abort(out.output.id, RequestStatus::kFinishedStopped);
      choice.finish(RequestStatus::kFinishedStopped);
    }
  }
}

OfflineRequest& OfflineEngine::request(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) fail<InvalidArgument>("no request with id {}", id);
  return it->second;
}

OfflineRequest OfflineEngine::take(RequestId id) {
  OfflineRequest taken = std::move(request(id));
  requests_.erase(id);
  for (size_t i = 0; i < taken.choices.size(); ++i)
    if (!taken.choices[i].finished()) {
      engine_->abort(id + static_cast<RequestId>(i));
      taken.choices[i].finish(RequestStatus::kFinishedCancelled);
    }
  return taken;
}

}  // namespace lemma::python
