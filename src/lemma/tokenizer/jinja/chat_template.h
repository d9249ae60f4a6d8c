// Chat templates: a Jinja2 interpreter that renders Hugging Face chat templates exactly as
// transformers does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols).
// A ChatTemplate is parsed once and is immutable; render() is const and safe to call concurrently.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/tokenizer/marked_text.h"

namespace lemma {

// Syntax or render error; the message is "<template name>:<line>: <what>".
class TemplateError : public Error {
 public:
  using Error::Error;
};

// Everything a chat template sees. JSON objects keep their key order (ordered_json), as Python
// dicts do: `tools | tojson` must print keys in the order the caller gave them. Plain
// nlohmann::json values convert implicitly (but arrive with sorted keys).
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null when absent
  bool add_generation_prompt = false;
  std::optional<std::string> bos_token, eos_token;  // passed only when set (else undefined)
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();  // more top-level variables
  std::optional<std::time_t> now;  // clock for strftime_now (local time); nullopt = real time
};

namespace jinja {
struct Program;
}

class ChatTemplate {
 public:
  // Parses `source`; throws TemplateError on syntax errors.
  explicit ChatTemplate(std::string source, std::string name = "chat_template");
  ~ChatTemplate();
  // Copies share the immutable parsed program (cheap).
  ChatTemplate(const ChatTemplate&);
  ChatTemplate& operator=(const ChatTemplate&);
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders with `inputs`; throws TemplateError (raise_exception, type errors, sandbox violations).
  std::string render(const ChatTemplateInputs& inputs) const;
  // The same text as render(), as maximal spans of template text and of text that came from
  // `messages` or `tools` (every string in them, roles and keys included, is request text; the
  // template's literals, bos/eos tokens, extra_context and dates are not). Request text keeps
  // its mark through filters, methods, slicing, concatenation and formatting (jinja/marks.h), so
  // the tokenizer can refuse to read special tokens in it (Tokenizer::encode_spans).
  std::vector<TextSpan> render_spans(const ChatTemplateInputs& inputs) const;
  // render_spans() as one text with marked byte ranges.
  MarkedText render_marked(const ChatTemplateInputs& inputs) const;

  const std::string& name() const { return name_; }
  const std::string& source() const { return *source_; }

 private:
  std::string name_;
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const jinja::Program> program_;
};

}  // namespace lemma
