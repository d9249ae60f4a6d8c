"""SamplingParams: how each prompt is sampled and when it stops (vLLM's names and defaults).

Types are checked here (TypeError naming the field); ranges here and again in the engine
(ValueError naming the field and value).
"""

import math
from numbers import Integral, Real
from typing import Dict, List, Optional, Union


def _int(name, value, low=None, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"SamplingParams.{name} must be an int, got {type(value).__name__} {value!r}")
    if low is not None and value < low:
        raise ValueError(f"SamplingParams.{name} must be >= {low}, got {value}")
    return int(value)


def _float(name, value, low=None, high=None):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"SamplingParams.{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise ValueError(f"SamplingParams.{name} must be a finite number in {bounds}, got {value}")
    return value


def _bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"SamplingParams.{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


class SamplingParams:
    """vLLM-compatible sampling parameters (keyword-only).

    temperature 0 is greedy. top_k 0 or -1 is off. logprobs=k returns the sampled token's logprob
    and the k most likely ones per output token. stop: strings that end a choice (cut from its
    text). max_tokens None: up to the engine's max_model_len.
    """

    def __init__(
        self,
        *,
        n: int = 1,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        seed: Optional[int] = None,
        stop: Optional[Union[str, List[str]]] = None,
        stop_token_ids: Optional[List[int]] = None,
        ignore_eos: bool = False,
        max_tokens: Optional[int] = 16,
        min_tokens: int = 0,
        logprobs: Optional[int] = None,
        logit_bias: Optional[Dict[int, float]] = None,
        skip_special_tokens: bool = True,
    ):
        self.n = _int("n", n, low=1)
        self.temperature = _float("temperature", temperature, low=0.0)
        self.top_p = _float("top_p", top_p, low=0.0, high=1.0)
        if self.top_p == 0.0:
            raise ValueError("SamplingParams.top_p must be in (0, 1], got 0.0")
        self.top_k = _int("top_k", top_k, low=-1)
        self.min_p = _float("min_p", min_p, low=0.0, high=1.0)
        self.repetition_penalty = _float("repetition_penalty", repetition_penalty)
        if self.repetition_penalty <= 0.0:
            raise ValueError(f"SamplingParams.repetition_penalty must be > 0, got {self.repetition_penalty}")
        self.presence_penalty = _float("presence_penalty", presence_penalty, low=-2.0, high=2.0)
        self.frequency_penalty = _float("frequency_penalty", frequency_penalty, low=-2.0, high=2.0)
        self.seed = _int("seed", seed, low=0, allow_none=True)
        if stop is None:
            stop = []
        elif isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
            raise TypeError(f"SamplingParams.stop must be a str or a list of str, got {stop!r}")
        self.stop = list(stop)
        stop_token_ids = [] if stop_token_ids is None else stop_token_ids
        if not isinstance(stop_token_ids, (list, tuple)):
            raise TypeError(f"SamplingParams.stop_token_ids must be a list of int, got {stop_token_ids!r}")
        self.stop_token_ids = [_int("stop_token_ids[]", t, low=0) for t in stop_token_ids]
        self.ignore_eos = _bool("ignore_eos", ignore_eos)
        self.max_tokens = _int("max_tokens", max_tokens, low=1, allow_none=True)
        self.min_tokens = _int("min_tokens", min_tokens, low=0)
        self.logprobs = _int("logprobs", logprobs, low=0, allow_none=True)
        if logit_bias is not None:
            if not isinstance(logit_bias, dict):
                raise TypeError(f"SamplingParams.logit_bias must be a dict of token id -> float, got {logit_bias!r}")
            logit_bias = {_int("logit_bias key", k, low=0): _float(f"logit_bias[{k}]", v) for k, v in logit_bias.items()}
        self.logit_bias = logit_bias
        self.skip_special_tokens = _bool("skip_special_tokens", skip_special_tokens)

    def _to_engine(self) -> dict:
        return dict(vars(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"SamplingParams({fields})"
