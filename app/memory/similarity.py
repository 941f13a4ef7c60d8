"""One similarity: how close a text is to a memory, the same for every question that asks it.

Recall's relevance floor, forget-by-query, the write path's review band and the dream's merge proposals
all compare this one value with their own threshold (issue 20, item 6; docs/RANKING.md):

    similarity = max(cosine, keyword evidence)

- cosine: the embedder's, clamped to [0, 1].
- keyword coverage: the text's Okapi BM25 in the memory (app.store.bm25, over the scope's statistics, as
  recall's text half scores it) divided by the BM25 of an *ideal* match, a memory of the scope's mean
  length holding each of the text's lexemes once, which is the sum of their idf (a lexeme the scope
  never holds has the largest idf). Clamped to 1 (a short memory holding every lexeme scores a little
  more than the ideal). Unlike recall's ranking component (BM25 over the query's best candidate, which
  is 1 for the best match of any query, relevant or not) it does not depend on the other candidates.
- keyword evidence of a question (recall's floor, forget-by-query): its BM25 saturated by
  `bm25 / (bm25 + ENGRAM_KEYWORD_SATURATION)` (`query_keyword`), as recall's floor compared it before:
  the coverage, measured in its place and beside it, dropped evidence or changed nothing (a long question
  covers little of any one memory). The coverage is in the trace's components beside it.
- keyword evidence of two memories (the write path, the dream): the smaller of the two directions'
  coverage, so a short memory is not a duplicate of every long one that contains its words; never the
  saturated BM25, which would make any two memories sharing two rare words near-duplicates.

The threshold is the
caller's: recall's floor (the embedder's `relevance_floor`), forget-by-query's and the review band's (the
embedder's review threshold). Automatic supersession stays on the cosine alone: a false supersede
retires a fact, so word overlap may raise a pair into the review band (a proposal), never past it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from app.memory.fusion import clamp, saturate
from app.store.bm25 import TextStats, bm25, document_frequencies, idf

Lexemes = Mapping[str, int]  # a text's lexemes and their term frequencies (its tsvector)


def coverage(bm25_score: float, ideal: float) -> float:
    """The share of an ideal match's BM25 that a memory reaches, in [0, 1]."""
    if bm25_score <= 0 or ideal <= 0:
        return 0.0
    return min(1.0, bm25_score / ideal)


def similarity(cosine: float | None, keyword: float) -> float:
    """The one similarity of a text and a memory: the higher of the cosine and the keyword evidence
    (`query_keyword` for a question, the two directions' smaller coverage for two memories)."""
    return max(clamp(cosine), keyword)


def query_keyword(bm25_score: float, saturation: float) -> float:
    """A question's keyword evidence in a memory: its BM25 saturated by `bm25 / (bm25 + saturation)`,
    what recall's floor has compared since BM25 (docs/RANKING.md). The coverage was measured in its
    place and beside it: alone it dropped evidence (a long question covers little of any one memory:
    BEAM's extracted facts 73.2 -> 67.1 % at 2048 tokens), beside it it changed nothing."""
    return saturate(bm25_score, saturation)


def ideal_bm25(lexemes: Iterable[str], dfs: Mapping[str, int], stats: TextStats) -> float:
    """The BM25 of a memory of mean length holding each lexeme once: the sum of their idf."""
    return sum(idf(stats.rows, dfs.get(lexeme, 0)) for lexeme in set(lexemes))


def text_coverage(
    query: Iterable[str], memory: Lexemes, dfs: Mapping[str, int], stats: TextStats, *, k1: float, b: float
) -> float:
    """The keyword coverage of a memory (`memory`: its lexemes' tf) by a text's lexemes `query`, as the
    candidate statement computes it (its SQL is tested equal to this)."""
    wanted = set(query)
    tfs = {lexeme: tf for lexeme, tf in memory.items() if lexeme in wanted}
    score = bm25(tfs, len(memory), dfs, stats, k1=k1, b=b)
    return coverage(score, ideal_bm25(wanted, dfs, stats))


def pair_similarity(
    cosine: float | None,
    first: Lexemes,
    second: Lexemes,
    dfs: Mapping[str, int],
    stats: TextStats,
    *,
    k1: float,
    b: float,
) -> float:
    """The similarity of two memories: the coverage is the smaller of the two directions."""
    lexical = min(
        text_coverage(first.keys(), second, dfs, stats, k1=k1, b=b),
        text_coverage(second.keys(), first, dfs, stats, k1=k1, b=b),
    )
    return similarity(cosine, lexical)


def forget_floor(relevance_floor: float, review: float) -> float:
    """Forget-by-query's default floor: halfway between recall's floor (the memory is about the text at
    all) and the review band (possibly the same fact): a description must be clearly about a memory
    before it is forgotten, more than a recall needs and less than a restatement."""
    return (relevance_floor + review) / 2


def statistics(texts: Sequence[Lexemes]) -> tuple[dict[str, int], TextStats]:
    """df and (N, mean length) over a set of texts, for similarities within that set (the dream's
    memories; the write path's new memory and its nearest neighbours)."""
    dfs = document_frequencies(texts)
    mean = sum(len(t) for t in texts) / len(texts) if texts else 0.0
    return dfs, TextStats(len(texts), mean)


def similar_pairs(
    vectors: Sequence[Sequence[float] | None],
    texts: Sequence[Lexemes],
    threshold: float,
    *,
    k1: float,
    b: float,
) -> list[tuple[int, int, float]]:
    """The pairs (i, j, similarity), i < j, whose `pair_similarity` reaches `threshold`, with the set's
    own statistics. `vectors[i]` None: a memory with no comparable vector (lexical only)."""
    dfs, stats = statistics(texts)
    units = [_unit(v) if v is not None else None for v in vectors]
    out: list[tuple[int, int, float]] = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            a, c = units[i], units[j]
            cosine = float(np.dot(a, c)) if a is not None and c is not None else None
            if (cosine is None or cosine < threshold) and not texts[i].keys() & texts[j].keys():
                continue  # below on the cosine, and no shared lexeme: no coverage either
            value = pair_similarity(cosine, texts[i], texts[j], dfs, stats, k1=k1, b=b)
            if value >= threshold:
                out.append((i, j, value))
    return out


def _unit(vector: Sequence[float]) -> npt.NDArray[np.float64]:
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array
