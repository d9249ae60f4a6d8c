"""What generate() and chat() return, shaped as vLLM's RequestOutput / CompletionOutput."""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union


@dataclass
class Logprob:
    """One token's log-probability under the raw logits (vLLM's Logprob)."""

    logprob: float
    rank: Optional[int] = None  # 1 = most likely; None for a sampled token outside the top entries
    decoded_token: Optional[str] = None


@dataclass
class CompletionOutput:
    """One choice of a request: its text, token ids and, when asked for, per-token logprobs."""

    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float]  # None unless SamplingParams.logprobs was set
    logprobs: Optional[List[Dict[int, Logprob]]]  # one dict per token: the sampled one and the top ones
    finish_reason: Optional[str] = None  # "stop", "length", "abort" or "error"; None while running
    stop_reason: Union[str, int, None] = None  # the stop string or stop_token_ids entry that ended it
    error: Optional[str] = None  # why it failed (finish_reason "error"); generate() raises it

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    """One prompt's result: its choices in `outputs` (n of them)."""

    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    outputs: List[CompletionOutput] = field(default_factory=list)
    finished: bool = False


def completion_from(raw) -> CompletionOutput:
    index, text, token_ids, logprobs, cumulative, reason, stop_reason, error = raw
    if logprobs is not None:
        logprobs = [{tok: Logprob(*entry) for tok, entry in step.items()} for step in logprobs]
    return CompletionOutput(index, text, list(token_ids), cumulative, logprobs, reason, stop_reason,
                            error if reason == "error" else None)


def request_from(request_id: str, prompt: Optional[str], raw) -> RequestOutput:
    prompt_token_ids, choices, finished = raw
    return RequestOutput(request_id, prompt, list(prompt_token_ids), [completion_from(c) for c in choices], finished)
