"""lemma: offline LLM inference on the CPU with vLLM's Python shape.

    from lemma import LLM, SamplingParams
    llm = LLM(model="model.gguf", max_num_seqs=8)
    for out in llm.generate(["Once upon a time"], SamplingParams(temperature=0, max_tokens=32)):
        print(out.outputs[0].text)

Every prompt of one generate() call runs in the same continuously batched engine; the GIL is
released while the engine runs.
"""

from .llm import LLM
from .outputs import CompletionOutput, Logprob, RequestOutput
from .sampling_params import SamplingParams
from .tokenizer import Tokenizer

__all__ = ["LLM", "SamplingParams", "RequestOutput", "CompletionOutput", "Logprob", "Tokenizer"]
