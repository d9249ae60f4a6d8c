// OfflineEngine: what Python's `LLM` runs on — a model, its tokenizer and chat template, and one
// continuous-batching Engine that every submitted prompt joins, with each choice's text made as
// its tokens arrive (CompletionState). vLLM's offline LLM over its engine, in C++; the binding
// (bindings.cpp) adds the GIL and Python objects. Not thread-safe: the caller serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "completion_state.h"
#include "llm_options.h"
#include "lemma/engine/engine.h"
#include "lemma/model/model.h"
#include "lemma/tokenizer/jinja/chat_template.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::python {

struct ModelTexts;  // offline_engine.cpp: the tokenizer, chat template and BOS/EOS texts of a model

// One prompt's settings beyond SamplingParams (vLLM's SamplingParams fields of the same names).
struct OfflineRequestParams {
  SamplingParams sampling = {};
  int n = 1;                                // choices of the prompt
  std::optional<int64_t> max_tokens = 16;   // nullopt: up to max_model_len
  int64_t min_tokens = 0;
  std::vector<std::string> stop = {};       // stop strings (cut from the text)
  std::vector<int32_t> stop_token_ids = {}; // ids that end a choice (kept in its token_ids)
  bool ignore_eos = false;
  bool skip_special_tokens = true;
};

struct OfflineRequest {
  std::vector<int32_t> prompt_token_ids = {};
  std::vector<CompletionState> choices = {};
  bool finished() const;
};

class OfflineEngine {
 public:
  // Opens the model and its tokenizer; throws lemma::Error subclasses naming what is wrong.
  explicit OfflineEngine(const LlmOptions& options);
  OfflineEngine(const OfflineEngine&) = delete;
  OfflineEngine& operator=(const OfflineEngine&) = delete;

  const Tokenizer& tokenizer() const { return tokenizer_; }
  const ModelConfig& model_config() const { return model_.config(); }
  int64_t max_model_len() const { return max_model_len_; }

  // Prompt text -> ids with the model's BOS rule, as `lemma generate --prompt` does.
  std::vector<int32_t> encode_prompt(std::string_view text) const;
  // `messages` (a JSON array of {role, content}) rendered by `chat_template` (else the model's, else
  // ChatML) and tokenised; text from the messages never becomes control tokens. Throws
  // TemplateError / InvalidArgument.
  struct ChatPrompt {
    std::string text = {};
    std::vector<int32_t> token_ids = {};
  };
  ChatPrompt chat_prompt(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                   const std::optional<std::string>& chat_template) const;

  // Queues one prompt (all its choices); throws InvalidArgument (nothing queued) for bad values.
  RequestId add_request(std::vector<int32_t> prompt, const OfflineRequestParams& params);
  // One engine step: every queued and running request advances together.
  void step();
  bool has_unfinished_requests() const { return engine_->has_unfinished_requests(); }
  // Requests queued and not yet taken (finished or not).
  size_t num_requests() const { return requests_.size(); }

  // A queued request's state; throws InvalidArgument for an unknown id.
  OfflineRequest& request(RequestId id);
  // Removes a request (finished or not: a live one is aborted first) and returns its state.
  OfflineRequest take(RequestId id);

 private:
  OfflineEngine(const LlmOptions& options, ModelTexts texts);

  LlmOptions options_;
  Model model_;
  Tokenizer tokenizer_;
  ChatTemplate default_template_;
  std::optional<std::string> bos_text_, eos_text_;
  int64_t max_model_len_ = 0;
  std::unique_ptr<Engine> engine_;
  std::map<RequestId, OfflineRequest> requests_ = {};
  RequestId next_id_ = 0;
};

}  // namespace lemma::python
