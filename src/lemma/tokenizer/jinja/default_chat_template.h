// The chat template used for models that ship none (`lemma chat`, the server): ChatML, as
// Qwen and many fine-tunes use it. Documented in README.md; override with --chat-template FILE.
#pragma once

namespace lemma {

inline constexpr const char* kDefaultChatTemplate =
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

}  // namespace lemma
