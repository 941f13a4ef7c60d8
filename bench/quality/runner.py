"""Runs every (dataset, embedder, mode, system) over every question and budget; collects the rows."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from tqdm import tqdm

from app.lib.tokens import TokenCounter
from app.vocabulary import Source
from bench.quality import beam, locomo, seeds, synthetic
from bench.quality.embedding import CachedEmbedder
from bench.quality.engram import EngramStore, EngramSystem
from bench.quality.floor import relevance_signals
from bench.quality.metrics import Score, evidence_recall, ranks, score, unique, whole_turns
from bench.quality.model import Conversation, Dataset, Question, load_neutral
from bench.quality.systems import Baselines
from bench.quality.units import DEFAULT_CHUNK_CHARS, Forget, Unit, extracted_units, flatten, raw_units

ANY = "any"  # embedder / mode of the systems that use neither (no_memory, full_history)
INDEPENDENT = ("no_memory", "full_history")
RANKED = ("dense", "bm25", "engram")
QUESTION_DELAY = timedelta(days=1)


@dataclass(slots=True)
class Options:
    systems: list[str]
    budgets: list[int]
    modes: list[str]
    limit: int | None = None
    chunk_chars: int = DEFAULT_CHUNK_CHARS
    seed: int = 7
    personas: int = 12


@dataclass(slots=True)
class Collected:
    rows: list[dict[str, Any]] = field(default_factory=list)
    seed_rows: list[dict[str, Any]] = field(default_factory=list)
    capabilities: dict[str, Any] = field(default_factory=dict)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    engram_actions: dict[str, dict[str, int]] = field(default_factory=dict)
    published: dict[str, Any] = field(default_factory=dict)


def load_dataset(spec: str, options: Options) -> tuple[str, Any]:
    """('dataset', Dataset) or ('qma'|'memopilot', raw JSON) for one --dataset argument."""
    kind, _, path = spec.partition(":")
    if kind == "synthetic":
        seed = int(path) if path else options.seed
        return "dataset", synthetic.generate(seed, options.personas).limit(options.limit)
    if not path:
        raise ValueError(f"--dataset {spec!r}: give a path, e.g. {kind}:PATH")
    location = Path(path).expanduser()
    if kind == "locomo":
        return "dataset", locomo.load(location).limit(options.limit)
    if kind == "beam":
        return "dataset", beam.load(location, options.limit)
    if kind == "json":
        return "dataset", load_neutral(location).limit(options.limit)
    if kind in ("qma", "qma-personas"):
        return "qma", json.loads(location.read_text())
    if kind == "memopilot":
        return "memopilot", json.loads(location.read_text())
    raise ValueError(f"unknown dataset kind {kind!r} (synthetic, locomo, beam, json, qma, memopilot)")


def by_session(units: Sequence[Unit]) -> list[list[Unit]]:
    """Consecutive units of one session together (raw mode's ingestion calls)."""
    out: list[list[Unit]] = []
    for unit in units:
        if out and out[-1][0].session_id == unit.session_id:
            out[-1].append(unit)
        else:
            out.append([unit])
    return out


def _row(
    dataset: Dataset,
    question: Question,
    embedder: str,
    mode: str,
    system: str,
    scores: Sequence[Score],
    tokens: Sequence[int],
    latency: Sequence[float],
    rank: dict[str, float] | None = None,
    rank_ms: float | None = None,
    signals: dict[str, Any] | None = None,
    whole: Sequence[float | None] | None = None,
) -> dict[str, Any]:
    return {
        "dataset": dataset.name,
        "embedder": embedder,
        "mode": mode,
        "system": system,
        "conversation": question.conversation_id,
        "question": question.id,
        "category": question.category,
        "group": question.group,
        "kind": question.kind,
        "n_evidence": len(question.evidence),
        "recall": [s.recall for s in scores],
        "recall_whole": list(whole) if whole is not None else [s.recall for s in scores],
        "stale": [s.stale for s in scores],
        "update_ok": [s.update_ok for s in scores],
        "both": [s.both for s in scores],
        "abstained": [s.abstained for s in scores],
        "tokens": list(tokens),
        "latency_ms": [round(x, 3) for x in latency],
        "rank": rank,
        "rank_ms": None if rank_ms is None else round(rank_ms, 3),
        "signals": signals,  # Engram's: what a relevance floor would keep (bench.quality.floor)
    }


def _whole_recall(question: Question, shown: Sequence[str], per_turn: Mapping[str, int]) -> float | None:
    """Evidence recall counting only the turns shown in full (metrics.whole_turns)."""
    if not (question.by_ids and question.evidence):
        return None
    return evidence_recall(question.evidence, whole_turns(shown, per_turn))


class Runner:
    def __init__(
        self,
        options: Options,
        embedders: Sequence[CachedEmbedder],
        store: EngramStore | None,
        collected: Collected,
    ) -> None:
        self.options = options
        self.embedders = embedders
        self.store = store
        self.out = collected
        self.counter = TokenCounter()
        self.engrams = {e.label: EngramSystem(store, e) for e in embedders} if store is not None else {}

    def _timed(self, phase: str, started: float) -> None:
        self.out.phases[phase] += time.perf_counter() - started

    async def run_dataset(self, dataset: Dataset, bar: tqdm) -> None:
        options = self.options
        self.out.datasets[dataset.name] = {
            "kind": dataset.kind,
            "conversations": len(dataset.conversations),
            "turns": sum(len(c.turns) for c in dataset.conversations),
            "questions": dict(Counter(q.group for q in dataset.questions)),
            "notes": dataset.notes,
        }
        by_conv: dict[str, list[Question]] = defaultdict(list)
        for q in dataset.questions:
            by_conv[q.conversation_id].append(q)

        started = time.perf_counter()
        raw = {c.id: raw_units(c, self.counter, options.chunk_chars) for c in dataset.conversations}
        self._timed("units", started)
        extracted: dict[str, tuple[list[list[Unit]], list[list[Forget]]]] = {}
        if "extracted" in options.modes:
            started = time.perf_counter()
            extracted = {
                c.id: extracted_units(c, self.counter, options.chunk_chars) for c in dataset.conversations
            }
            self._timed("extract", started)
        self.out.datasets[dataset.name]["units"] = {
            "raw": sum(len(u) for u in raw.values()),
            "extracted": sum(len(flatten(calls)) for calls, _ in extracted.values()),
        }

        independent = [s for s in options.systems if s in INDEPENDENT]
        if independent:
            for conv in dataset.conversations:
                self._independent(dataset, conv, raw[conv.id], by_conv[conv.id], independent)
                bar.update(len(by_conv[conv.id]))

        ranked = [s for s in options.systems if s in RANKED]
        for embedder in self.embedders if ranked else []:
            texts = [q.question for q in dataset.questions]
            for mode in options.modes:
                source = raw if mode == "raw" else {k: flatten(v[0]) for k, v in extracted.items()}
                texts += [u.content for units in source.values() for u in units]
            started = time.perf_counter()
            await embedder.warm(texts, f"embed {dataset.name} ({embedder.label})")
            self._timed(f"embed:{embedder.label}", started)
            for mode in options.modes:
                bar.set_postfix_str(f"{dataset.name} {embedder.label} {mode}")
                key = f"{dataset.name}|{embedder.label}|{mode}"
                engram = self.engrams.get(embedder.label) if "engram" in ranked else None
                before = Counter(engram.actions) if engram else Counter()
                for conv in dataset.conversations:
                    if mode == "raw":
                        calls: list[list[Unit]] = by_session(raw[conv.id])
                        forgets: list[list[Forget]] | None = None
                    else:
                        calls, forgets = extracted[conv.id]
                    questions = by_conv[conv.id]
                    await self._ranked(
                        dataset, conv, embedder, mode, calls, forgets, questions, ranked, engram, bar
                    )
                if engram:
                    self.out.engram_actions[key] = dict(Counter(engram.actions) - before)

    def _independent(
        self,
        dataset: Dataset,
        conv: Conversation,
        units: list[Unit],
        questions: list[Question],
        systems: list[str],
    ) -> None:
        baselines = Baselines(units, None, self.counter)
        for q in questions:
            for system in systems:
                order, ms = baselines.ranking(system, q.question, None)
                scores, tokens, latency = [], [], []
                for budget in self.options.budgets:
                    started = time.perf_counter()
                    packed = baselines.retrieve(system, order, budget)
                    latency.append(ms + (time.perf_counter() - started) * 1000)
                    ids = [units[i].turn_id for i in packed.chosen]
                    scores.append(score(q, ids, packed.context))
                    tokens.append(packed.tokens)
                rank = ranks(q, unique(units[i].turn_id for i in order)) if system == "full_history" else None
                self.out.rows.append(_row(dataset, q, ANY, ANY, system, scores, tokens, latency, rank))

    async def _ranked(
        self,
        dataset: Dataset,
        conv: Conversation,
        embedder: CachedEmbedder,
        mode: str,
        calls: list[list[Unit]],
        forgets: list[list[Forget]] | None,
        questions: list[Question],
        systems: list[str],
        engram: EngramSystem | None,
        bar: tqdm,
    ) -> None:
        units = flatten(calls)
        baselines = Baselines(units, embedder.matrix([u.content for u in units]), self.counter)
        user = f"{dataset.name}|{embedder.label}|{mode}|{conv.user_id}"
        if engram is not None:
            started = time.perf_counter()
            source = Source.IMPORT if mode == "raw" else Source.EXTRACT
            await engram.ingest(user, calls, forgets, source=source)
            await engram.store.settle()
            self._timed(f"ingest:{embedder.label}", started)
        at = conv.end + QUESTION_DELAY
        qvecs = embedder.matrix([q.question for q in questions])
        per_turn = Counter(u.turn_id for u in units)
        started = time.perf_counter()
        for q, qvec in zip(questions, qvecs, strict=True):
            for system in systems:
                scores, tokens, latency, whole = [], [], [], []
                signals = None
                if system == "engram":
                    assert engram is not None
                    ranking, rank_ms, candidates = await engram.ranking(user, q.question, q.project, at)
                    signals = relevance_signals(candidates, q.evidence)
                    for budget in self.options.budgets:
                        got = await engram.recall(user, q.question, q.project, budget, at)
                        scores.append(score(q, got.turn_ids, got.context))
                        whole.append(_whole_recall(q, got.whole_ids, per_turn))
                        tokens.append(got.tokens)
                        latency.append(got.latency_ms)
                else:
                    order, rank_ms = baselines.ranking(system, q.question, qvec)
                    ranking = [units[i].turn_id for i in order]
                    for budget in self.options.budgets:
                        t0 = time.perf_counter()
                        packed = baselines.retrieve(system, order, budget)
                        latency.append(rank_ms + (time.perf_counter() - t0) * 1000)
                        ids = [units[i].turn_id for i in packed.chosen]
                        scores.append(score(q, ids, packed.context))
                        whole.append(_whole_recall(q, ids, per_turn))
                        tokens.append(packed.tokens)
                self.out.rows.append(
                    _row(
                        dataset,
                        q,
                        embedder.label,
                        mode,
                        system,
                        scores,
                        tokens,
                        latency,
                        ranks(q, ranking),
                        rank_ms,
                        signals,
                        whole,
                    )
                )
            bar.update(1)
        self._timed(f"questions:{embedder.label}", started)

    async def run_seeds(self, kind: str, data: dict[str, Any]) -> None:
        baselines = [s for s in self.options.systems if s != "engram"]
        for embedder in self.embedders:
            engram = self.engrams.get(embedder.label) if "engram" in self.options.systems else None
            started = time.perf_counter()
            if kind == "qma":
                rows, capability = await seeds.run_personas(data, embedder, engram, baselines, self.counter)
                if capability:
                    self.out.capabilities[f"qma_personas|{embedder.label}"] = capability
                self.out.published["qma_personas"] = {
                    "results": data.get("published_results"),
                    "baselines": data.get("baselines"),
                }
            else:
                rows = await seeds.run_memopilot(data, embedder, engram, baselines, self.counter)
                self.out.published["memopilot_diagnostic"] = {
                    "summary": data.get("published_results", {}).get("summary"),
                    "ablation": data.get("published_ablation"),
                }
            self.out.seed_rows.extend(r.as_dict() for r in rows)
            self._timed(f"seeds:{kind}", started)
