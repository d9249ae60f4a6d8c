"""LLM.generate(): vLLM's result shape, greedy text identical to `lemma generate`, batching,
sampling, stop strings, logprobs."""

import json
import math
import subprocess

import pytest

import lemma

from lemma import CompletionOutput, RequestOutput, SamplingParams

PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben went to the park", "One day"]


def cli_greedy(binary, model, prompt, max_tokens):
    out = subprocess.run([binary, "generate", "--model", model, "--prompt", prompt, "--temperature", "0",
                          "--max-tokens", str(max_tokens), "--threads", "1", "--json"],
                         check=True, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout)


def test_greedy_text_and_ids_equal_the_cli(llm, stories_path, lemma_binary):
    params = SamplingParams(temperature=0, max_tokens=48)
    outputs = llm.generate(PROMPTS, params)  # one batch
    assert len(outputs) == len(PROMPTS)
    for prompt, out in zip(PROMPTS, outputs):
        cli = cli_greedy(lemma_binary, stories_path, prompt, 48)
        assert isinstance(out, RequestOutput) and isinstance(out.outputs[0], CompletionOutput)
        assert out.prompt == prompt
        assert out.prompt_token_ids == cli["prompt_ids"]
        assert out.outputs[0].token_ids == cli["ids"]
        assert out.outputs[0].text == cli["text"]
        assert out.outputs[0].finish_reason == cli["finish_reason"]
        assert out.finished
    assert llm._engine.pending() == (False, 0)  # every request taken back out of the engine


def test_batched_results_equal_one_prompt_at_a_time(llm):
    params = SamplingParams(temperature=0.8, top_p=0.9, seed=7, max_tokens=24)
    together = llm.generate(PROMPTS, params)
    alone = [llm.generate(p, params)[0] for p in PROMPTS]
    assert [o.outputs[0].token_ids for o in together] == [o.outputs[0].token_ids for o in alone]


def test_max_tokens_ends_with_length(llm):
    out = llm.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=5, ignore_eos=True))[0]
    assert len(out.outputs[0].token_ids) == 5
    assert out.outputs[0].finish_reason == "length" and out.outputs[0].stop_reason is None


def test_token_id_prompts_and_per_prompt_params(llm):
    ids = llm.encode("Once upon a time")
    outs = llm.generate([{"prompt_token_ids": ids}, "Once upon a time"],
                        [SamplingParams(temperature=0, max_tokens=8), SamplingParams(temperature=0, max_tokens=3)])
    assert outs[0].prompt_token_ids == ids and outs[0].prompt is None
    assert len(outs[0].outputs[0].token_ids) <= 8 and len(outs[1].outputs[0].token_ids) <= 3
    assert outs[0].outputs[0].token_ids[:3] == outs[1].outputs[0].token_ids


def test_n_choices_are_seeded_and_reproducible(llm):
    params = SamplingParams(n=3, temperature=1.0, seed=123, max_tokens=16, ignore_eos=True)
    first = llm.generate("The little dog", params)[0]
    again = llm.generate("The little dog", params)[0]
    assert [c.index for c in first.outputs] == [0, 1, 2]
    assert [c.token_ids for c in first.outputs] == [c.token_ids for c in again.outputs]
    assert len({tuple(c.token_ids) for c in first.outputs}) > 1  # the choices differ


def test_stop_string_cuts_the_text(llm):
    full = llm.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=48))[0].outputs[0]
    words = full.text.split()
    stop = words[len(words) // 2]
    cut = llm.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=48, stop=[stop]))[0].outputs[0]
    assert cut.finish_reason == "stop" and cut.stop_reason == stop
    assert stop not in cut.text
    assert full.text.startswith(cut.text)
    assert full.text[len(cut.text):].startswith(stop)


def test_logprobs_and_cumulative_logprob(llm):
    out = llm.generate("One day", SamplingParams(temperature=0, max_tokens=6, logprobs=3, ignore_eos=True))[0]
    c = out.outputs[0]
    assert len(c.logprobs) == len(c.token_ids) == 6
    total = 0.0
    for token, entries in zip(c.token_ids, c.logprobs):
        assert token in entries
        assert entries[token].rank == 1  # greedy picks the most likely token
        assert len(entries) == 3
        assert all(e.logprob <= 0.0 for e in entries.values())
        total += entries[token].logprob
    assert math.isclose(c.cumulative_logprob, total, rel_tol=1e-5, abs_tol=1e-5)
    plain = llm.generate("One day", SamplingParams(temperature=0, max_tokens=6, ignore_eos=True))[0].outputs[0]
    assert plain.logprobs is None and plain.cumulative_logprob is None
    assert plain.token_ids == c.token_ids


def test_tokenizer_round_trip(llm):
    tok = llm.get_tokenizer()
    ids = tok.encode("Once upon a time", add_special_tokens=False)
    assert ids and tok.decode(ids) == "Once upon a time"
    assert llm.encode("Once upon a time")[0] == tok.bos_token_id  # the model's BOS rule
    assert tok.vocab_size == 512


def test_stop_token_ids_end_the_choice_and_are_kept(llm):
    free = llm.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=16, ignore_eos=True))[0]
    ids = free.outputs[0].token_ids
    stop_id = ids[5]
    first = ids.index(stop_id)
    out = llm.generate("Once upon a time", SamplingParams(temperature=0, max_tokens=16, stop_token_ids=[stop_id]))[0]
    assert out.outputs[0].token_ids == ids[:first + 1]
    assert out.outputs[0].finish_reason == "stop" and out.outputs[0].stop_reason == stop_id


def test_engine_keywords_reach_the_engine(stories_path, llm):
    # Scalar kernels, 4-token prefill chunks, 4-token blocks, no prefix cache, bf16 KV: the same
    # greedy tokens as the default engine (scalar and vector kernels agree on stories260K's argmax).
    other = lemma.LLM(stories_path, isa="scalar", max_num_batched_tokens=4, block_size=4,
                      enable_prefix_caching=False, threads=1, pin_threads=False, max_num_seqs=2)
    params = SamplingParams(temperature=0, max_tokens=24)
    prompt = "Lily and Ben went to the park"
    assert other.generate(prompt, params)[0].outputs[0].token_ids == llm.generate(prompt, params)[0].outputs[0].token_ids
    short = lemma.LLM(stories_path, max_model_len=20, threads=1, pin_threads=False)
    assert short.max_model_len == 20
    out = short.generate(prompt, SamplingParams(temperature=0, max_tokens=None, ignore_eos=True))[0]
    assert len(out.prompt_token_ids) + len(out.outputs[0].token_ids) == 20
    assert out.outputs[0].finish_reason == "length"
