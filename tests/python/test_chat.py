"""LLM.chat(): messages rendered by the chat template (stories260K has none: ChatML, as `lemma chat`)."""

from lemma import SamplingParams

MESSAGES = [{"role": "system", "content": "Tell stories."}, {"role": "user", "content": "A dog"}]


def test_chat_renders_chatml_and_generates_from_it(llm):
    params = SamplingParams(temperature=0, max_tokens=16)
    out = llm.chat(MESSAGES, params)[0]
    assert out.prompt == ("<|im_start|>system\nTell stories.<|im_end|>\n<|im_start|>user\nA dog<|im_end|>\n"
                          "<|im_start|>assistant\n")
    same = llm.generate({"prompt_token_ids": out.prompt_token_ids}, params)[0]
    assert out.outputs[0].token_ids == same.outputs[0].token_ids
    assert out.outputs[0].text == same.outputs[0].text


def test_chat_with_a_custom_template_and_a_batch_of_conversations(llm):
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    outs = llm.chat([MESSAGES, MESSAGES[1:]], SamplingParams(temperature=0, max_tokens=4), chat_template=template)
    assert [o.prompt for o in outs] == ["system: Tell stories.\nuser: A dog\nassistant:", "user: A dog\nassistant:"]
    assert outs[1].prompt_token_ids == llm.encode("user: A dog\nassistant:", add_special_tokens=False)
