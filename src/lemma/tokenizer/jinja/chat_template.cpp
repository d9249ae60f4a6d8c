#include "lemma/tokenizer/jinja/chat_template.h"

#include "lemma/tokenizer/jinja/evaluator.h"
#include "lemma/tokenizer/jinja/parser.h"

namespace lemma {

ChatTemplate::ChatTemplate(std::string source, std::string name)
    : name_(std::move(name)), source_(std::make_shared<const std::string>(std::move(source))) {
  try {
    program_ = std::make_shared<const jinja::Program>(jinja::parse(*source_, name_));
  } catch (const jinja::SyntaxError& e) {
    throw TemplateError(name_ + ":" + std::to_string(e.line) + ": " + e.type + ": " + e.message);
  }
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(const ChatTemplate&) = default;
ChatTemplate& ChatTemplate::operator=(const ChatTemplate&) = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const ChatTemplateInputs& inputs) const { return render_marked(inputs).take_text(); }

std::vector<TextSpan> ChatTemplate::render_spans(const ChatTemplateInputs& inputs) const {
  return render_marked(inputs).spans();
}

MarkedText ChatTemplate::render_marked(const ChatTemplateInputs& inputs) const {
  using jinja::Value;
  jinja::Dict vars;
  vars.set("messages", Value::from_json(inputs.messages, /*from_request=*/true));
  vars.set("tools", Value::from_json(inputs.tools, /*from_request=*/true));
  vars.set("documents", Value::none());
  vars.set("add_generation_prompt", Value(inputs.add_generation_prompt));
  if (inputs.bos_token) vars.set("bos_token", Value(*inputs.bos_token));
  if (inputs.eos_token) vars.set("eos_token", Value(*inputs.eos_token));
  if (inputs.extra_context.is_object()) {
    for (auto it = inputs.extra_context.begin(); it != inputs.extra_context.end(); ++it) {
      vars.set(it.key(), Value::from_json(it.value()));
    }
  }
  std::time_t now = inputs.now ? *inputs.now : std::time(nullptr);
  jinja::Evaluator evaluator(*program_, now);
  try {
    return evaluator.render(std::move(vars));
  } catch (const jinja::RenderError& e) {
    throw TemplateError(name_ + ":" + std::to_string(e.line) + ": " + e.message);
  } catch (const std::bad_alloc&) {
    throw TemplateError(name_ + ": MemoryError: out of memory while rendering");
  }
}

}  // namespace lemma
