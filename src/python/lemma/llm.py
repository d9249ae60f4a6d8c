"""LLM: a model and its continuously batched engine, used offline from Python (vLLM's LLM).

generate() submits all its prompts at once and runs the engine until they are done; chat()
renders messages with the model's chat template first; generate_stream() yields a request's
output piece by piece. The GIL is released while the engine runs, so other Python threads keep
going, and threads that share one LLM have their prompts batched together.
"""

import itertools
import json
import os
from typing import Dict, Iterator, List, Optional, Sequence, Union

from . import _lemma
from .outputs import RequestOutput, request_from
from .sampling_params import SamplingParams
from .tokenizer import Tokenizer

# Engine keywords: name -> (type, default). None default: the engine's own choice.
_ENGINE_OPTIONS = {
    "dtype": (str, "auto"),                 # lemma computes in the checkpoint's own types: only "auto"
    "kv_cache_dtype": (str, "auto"),        # auto, f32, bf16, int8, fp8
    "max_num_seqs": (int, 32),              # sequences running at once
    "max_num_batched_tokens": (int, 512),   # token budget per engine step (chunked prefill)
    "max_model_len": (int, None),           # prompt + output tokens; default: the model's context
    "kv_cache_tokens": (int, None),         # default: max_num_seqs x max_model_len within 4 GiB
    "block_size": (int, 16),                # tokens per KV block
    "enable_prefix_caching": (bool, True),
    "threads": (int, 0),                    # threads per forward; 0: one per core
    "isa": (str, None),                     # amx, avx512, avx2, scalar; default: the CPU's best
    "matmul_precision": (str, "auto"),      # auto or f32
    "interleave": (bool, True),
    "decode_plans": (bool, True),
    "pin_threads": (bool, True),
    "load": (str, "lazy"),                  # lazy, prefault, copy
    "seed": (int, 0),                       # seed of requests whose SamplingParams have none
}

PromptType = Union[str, Dict[str, object]]


def _check_options(options: dict) -> dict:
    unknown = sorted(set(options) - set(_ENGINE_OPTIONS))
    if unknown:
        raise TypeError(f"LLM() got unknown keyword argument(s) {', '.join(unknown)}; "
                        f"it takes {', '.join(sorted(_ENGINE_OPTIONS))}")
    resolved = {}
    for name, (kind, default) in _ENGINE_OPTIONS.items():
        value = options.get(name, default)
        if value is None:
            continue
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
            raise TypeError(f"LLM({name}=...) must be a {kind.__name__}, got {type(value).__name__} {value!r}")
        resolved[name] = value
    if resolved["dtype"] != "auto":
        raise ValueError(f"LLM(dtype={resolved['dtype']!r}): lemma computes in the checkpoint's own types; "
                         "dtype must be 'auto' (see kv_cache_dtype and matmul_precision)")
    return resolved


class LLM:
    """An offline engine over one model (a .gguf file or a Hugging Face directory)."""

    def __init__(self, model: str, **options):
        if not isinstance(model, (str, os.PathLike)):
            raise TypeError(f"LLM(model=...) must be a path, got {type(model).__name__}")
        model = os.fspath(model)
        if not os.path.exists(model):
            raise FileNotFoundError(f"LLM(model={model!r}): no such file or directory")
        self._options = _check_options(options)
        self._engine = _lemma.Engine(model, self._options)
        self._counter = itertools.count()
        self.model = model

    # -- tokenizer -----------------------------------------------------------------------------
    def get_tokenizer(self) -> Tokenizer:
        return Tokenizer(self._engine)

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        return self.get_tokenizer().encode(text, add_special_tokens)

    def decode(self, token_ids: List[int], skip_special_tokens: bool = True) -> str:
        return self.get_tokenizer().decode(token_ids, skip_special_tokens)

    @property
    def max_model_len(self) -> int:
        return self._engine.max_model_len

    # -- generation ----------------------------------------------------------------------------
    def generate(self, prompts: Union[PromptType, Sequence[PromptType]],
                 sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
                 use_tqdm: bool = False) -> List[RequestOutput]:
        """One RequestOutput per prompt, in order. A prompt is a str (encoded with the model's BOS
        rule, as `lemma generate --prompt`) or {"prompt_token_ids": [...]}. sampling_params: one
        for every prompt or a list with one per prompt (default: SamplingParams())."""
        if isinstance(prompts, (str, dict)):
            prompts = [prompts]
        texts, token_ids = zip(*[self._prompt(p) for p in prompts]) if prompts else ((), ())
        return self._run(list(texts), list(token_ids), sampling_params)

    def chat(self, messages, sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
             use_tqdm: bool = False, chat_template: Optional[str] = None,
             add_generation_prompt: bool = True) -> List[RequestOutput]:
        """Replies to one conversation (a list of {"role", "content"} dicts) or a list of them, the
        messages rendered by `chat_template` (default: the model's, else ChatML). Text from the
        messages never becomes control tokens."""
        conversations = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        texts, token_ids = [], []
        for conversation in conversations:
            text, ids = self._chat_prompt(conversation, chat_template, add_generation_prompt)
            texts.append(text)
            token_ids.append(ids)
        return self._run(texts, token_ids, sampling_params)

    def generate_stream(self, prompt: PromptType,
                        sampling_params: Optional[SamplingParams] = None) -> Iterator[RequestOutput]:
        """Yields the request's output as it grows: each RequestOutput carries what is new since the
        last one (text and token ids of each choice; vLLM's DELTA output kind); the last one has
        finished=True and the finish reasons. Closing the iterator early aborts the request."""
        text, ids = self._prompt(prompt)
        params = self._params_list(sampling_params, 1)
        request_id = self._engine.add_requests([ids], [params[0]._to_engine()])[0]
        name = str(next(self._counter))
        finished = False
        try:
            while not finished:
                raw = self._engine.next_delta(request_id)
                finished = raw[2]
                out = request_from(name, text, raw)
                self._raise_failures([out])
                yield out
        finally:
            if not finished:
                self._engine.abort(request_id)

    # -- helpers -------------------------------------------------------------------------------
    def _prompt(self, prompt: PromptType):
        if isinstance(prompt, str):
            return prompt, self._engine.encode(prompt, True)
        if isinstance(prompt, dict) and "prompt_token_ids" in prompt:
            ids = prompt["prompt_token_ids"]
            if isinstance(ids, (str, bytes)) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
                raise TypeError("prompt_token_ids must be a list of int")
            return prompt.get("prompt"), list(ids)
        if isinstance(prompt, dict) and "prompt" in prompt:
            return self._prompt(prompt["prompt"])
        raise TypeError(f"a prompt is a str or a dict with 'prompt' or 'prompt_token_ids', got {prompt!r}")

    def _chat_prompt(self, conversation, chat_template, add_generation_prompt):
        if not isinstance(conversation, (list, tuple)) or not all(isinstance(m, dict) for m in conversation):
            raise TypeError("messages must be a list of {'role': ..., 'content': ...} dicts (or a list of such lists)")
        for i, m in enumerate(conversation):
            if "role" not in m:
                raise ValueError(f"messages[{i}] has no 'role'")
        try:
            messages_json = json.dumps(list(conversation))
        except TypeError as e:
            raise TypeError(f"messages must be JSON-serialisable: {e}") from None
        return self._engine.chat_prompt(messages_json, add_generation_prompt, chat_template)

    @staticmethod
    def _params_list(sampling_params, count: int) -> List[SamplingParams]:
        if sampling_params is None:
            return [SamplingParams()] * count
        if isinstance(sampling_params, SamplingParams):
            return [sampling_params] * count
        if isinstance(sampling_params, (list, tuple)):
            if len(sampling_params) != count:
                raise ValueError(f"{count} prompts but {len(sampling_params)} SamplingParams")
            for p in sampling_params:
                if not isinstance(p, SamplingParams):
                    raise TypeError(f"sampling_params must be SamplingParams, got {type(p).__name__}")
            return list(sampling_params)
        raise TypeError(f"sampling_params must be SamplingParams or a list of them, got {type(sampling_params).__name__}")

    def _run(self, texts, token_ids, sampling_params) -> List[RequestOutput]:
        params = self._params_list(sampling_params, len(token_ids))
        if not token_ids:
            return []
        ids = self._engine.add_requests(token_ids, [p._to_engine() for p in params])
        raws = self._engine.run(ids)
        outs = [request_from(str(next(self._counter)), text, raw) for text, raw in zip(texts, raws)]
        self._raise_failures(outs)
        return outs

    @staticmethod
    def _raise_failures(outs: List[RequestOutput]):
        for out in outs:
            for c in out.outputs:
                if c.finish_reason == "error":
                    raise RuntimeError(f"request {out.request_id} choice {c.index} failed: {c.error}")
