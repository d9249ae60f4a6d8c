"""The model's tokenizer as LLM.get_tokenizer() returns it (encode / decode, special ids)."""

from typing import List, Optional


class Tokenizer:
    def __init__(self, engine):
        self._engine = engine

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """Token ids of `text`; add_special_tokens adds BOS as the model's metadata says."""
        if not isinstance(text, str):
            raise TypeError(f"encode() takes a str, got {type(text).__name__}")
        return self._engine.encode(text, add_special_tokens)

    def decode(self, token_ids: List[int], skip_special_tokens: bool = True) -> str:
        if isinstance(token_ids, (str, bytes)) or not all(isinstance(t, int) for t in token_ids):
            raise TypeError("decode() takes a list of int token ids")
        return self._engine.decode(list(token_ids), skip_special_tokens)

    @property
    def vocab_size(self) -> int:
        return self._engine.vocab_size

    @property
    def eos_token_id(self) -> Optional[int]:
        return self._engine.eos_token_id

    @property
    def bos_token_id(self) -> Optional[int]:
        return self._engine.bos_token_id
