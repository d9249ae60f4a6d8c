"""Bad input gives clear Python exceptions naming what was wrong."""

import pytest

import lemma
from lemma import SamplingParams


def test_unknown_engine_keywords_are_named(stories_path):
    with pytest.raises(TypeError, match="tensor_parallel_size, trust_remote_code"):
        lemma.LLM(stories_path, tensor_parallel_size=2, trust_remote_code=True)


def test_bad_engine_values(stories_path):
    with pytest.raises(TypeError, match="max_num_seqs"):
        lemma.LLM(stories_path, max_num_seqs="8")
    with pytest.raises(ValueError, match="max_num_seqs must be >= 1"):
        lemma.LLM(stories_path, max_num_seqs=0)
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        lemma.LLM(stories_path, kv_cache_dtype="f8")
    with pytest.raises(ValueError, match="dtype"):
        lemma.LLM(stories_path, dtype="float16")
    with pytest.raises(FileNotFoundError, match="no-such-model.gguf"):
        lemma.LLM("/nonexistent/no-such-model.gguf")


def test_bad_sampling_params():
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1)
    with pytest.raises(TypeError, match="max_tokens"):
        SamplingParams(max_tokens=1.5)
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)
    with pytest.raises(TypeError, match="stop"):
        SamplingParams(stop=[1])
    with pytest.raises(TypeError, match="unexpected keyword argument 'best_of'"):
        SamplingParams(best_of=2)


def test_bad_requests(llm):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        llm.generate({"prompt_token_ids": [1, 99999]}, SamplingParams(max_tokens=2))
    with pytest.raises(ValueError, match="leaves no room within max_model_len"):
        llm.generate({"prompt_token_ids": [1] * (llm.max_model_len + 1)}, SamplingParams(max_tokens=2))
    with pytest.raises(TypeError, match="prompt"):
        llm.generate([42])
    with pytest.raises(ValueError, match="2 prompts but 1 SamplingParams"):
        llm.generate(["a", "b"], [SamplingParams()])
    with pytest.raises(ValueError, match="chat_template"):
        llm.chat([{"role": "user", "content": "hi"}], chat_template="{% if %}")
    # A failed submission queued nothing (the batch's valid prompts included): the engine still runs.
    with pytest.raises(ValueError, match="outside the vocabulary"):
        llm.generate(["One day", {"prompt_token_ids": [1, 99999]}], SamplingParams(max_tokens=2))
    assert llm._engine.pending() == (False, 0)
    assert llm.generate("One day", SamplingParams(temperature=0, max_tokens=2))[0].finished
