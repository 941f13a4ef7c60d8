"""Okapi BM25 in pure Python over a fixed set of documents (the BM25 top-k baseline).

Tokens: lower-cased [a-z0-9]+ runs, English function words removed, a light plural/possessive strip.
idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (never negative); k1 = 1.2, b = 0.75.
Only documents sharing a term with the query are ranked, as a search engine returns them.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    """a an the and or but if then than so as of at by for from in into on onto to with without about
    over under is am are was were be been being do does did has have had will would shall should can
    could may might must i me my we us our you your he him his she her it its they them their this
    that these those there here what which who whom whose when where why how also just very too s t
    re ve ll d m""".split()  # noqa: SIM905
)


def tokenize(text: str) -> list[str]:
    out = []
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


class BM25:
    def __init__(self, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        for index, doc in enumerate(documents):
            terms = tokenize(doc)
            self.lengths.append(len(terms))
            for term, tf in Counter(terms).items():
                self.postings[term].append((index, tf))
        self.n = len(self.lengths)
        self.avg_len = (sum(self.lengths) / self.n) if self.n else 0.0

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> dict[int, float]:
        totals: dict[int, float] = defaultdict(float)
        if not self.n:
            return totals
        for term in set(tokenize(query)):
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for index, tf in postings:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / (self.avg_len or 1.0))
                totals[index] += idf * tf * (self.k1 + 1) / (tf + norm)
        return totals

    def rank(self, query: str) -> list[int]:
        """Matching documents, best first (ties: earlier document first)."""
        scored = self.scores(query)
        return sorted(scored, key=lambda i: (-scored[i], i))
