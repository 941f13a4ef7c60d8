"""Model proposals checked against the user's live memories (pure).

Only ids that were in the digest count: an id the model invented, one of another user or tenant, or
one that is no longer live is dropped. A merge or supersede naming such an id is dropped whole (its
text or its direction rests on something we cannot vouch for); a forget or resalience keeps its
valid targets.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence

from app.dream.models import Candidate, Known
from app.dream.output import ModelProposal
from app.lib.redaction import redact
from app.vocabulary import MemoryType, ProposalKind, SupersedeRule

MAX_RATIONALE = 500
Built = Candidate | str  # a candidate, or why the proposal was dropped


def _resolve(raw_ids: Sequence[str], known: Mapping[uuid.UUID, Known]) -> tuple[list[uuid.UUID], int]:
    """Known ids in order without repeats, and how many ids were not known (or not ids at all)."""
    ids: list[uuid.UUID] = []
    unknown = 0
    for raw in raw_ids:
        try:
            parsed = uuid.UUID(raw.strip())
        except ValueError:
            unknown += 1
            continue
        if parsed not in known:
            unknown += 1
        elif parsed not in ids:
            ids.append(parsed)
    return ids, unknown


def _unit(value: float | None) -> float | None:
    return float(value) if value is not None and 0.0 <= value <= 1.0 else None


def _rationale(p: ModelProposal) -> str:
    return redact(p.rationale.replace("\x00", "")).text[:MAX_RATIONALE]


def _common(values: Sequence[str | None]) -> str | None:
    return values[0] if len(set(values)) == 1 else None


def _forget(p: ModelProposal, ids: list[uuid.UUID], _: Mapping[uuid.UUID, Known], max_chars: int) -> Built:
    if not ids:
        return "forget names no live memory of the user"
    return Candidate(ProposalKind.FORGET, tuple(ids), {}, _rationale(p))


def _resalience(
    p: ModelProposal, ids: list[uuid.UUID], _: Mapping[uuid.UUID, Known], max_chars: int
) -> Built:
    salience = _unit(p.salience)
    if salience is None:
        return "resalience needs a salience between 0 and 1"
    if not ids:
        return "resalience names no live memory of the user"
    return Candidate(ProposalKind.RESALIENCE, tuple(ids), {"salience": salience}, _rationale(p))


def _merge(p: ModelProposal, ids: list[uuid.UUID], known: Mapping[uuid.UUID, Known], max_chars: int) -> Built:
    targets = [known[i] for i in ids]
    if len(targets) < 2:
        return "a merge needs at least two live memories of the user"
    if len({t.project_id for t in targets}) > 1:
        return "a merge cannot join memories of different projects"
    content = redact((p.content or "").replace("\x00", "").strip()).text
    if not content or len(content) > max_chars:
        return f"a merge needs content of 1 to {max_chars} characters"
    mtype = MemoryType.of(p.type) or _common([t.type for t in targets])
    if mtype is None:
        return "a merge of different types needs a valid type"
    importance = _unit(p.importance)
    payload = {
        "content": content,
        "type": mtype,
        "subject": _common([t.subject for t in targets]),
        "importance": importance if importance is not None else max(t.importance for t in targets),
    }
    return Candidate(ProposalKind.MERGE, tuple(ids), payload, _rationale(p))


def _supersede(
    p: ModelProposal, ids: list[uuid.UUID], known: Mapping[uuid.UUID, Known], max_chars: int
) -> Built:
    if len(ids) != 2:
        return "a supersede names exactly two live memories: [old, new]"
    old, new = known[ids[0]], known[ids[1]]
    if old.project_id != new.project_id:
        return "a supersede cannot cross projects"
    payload = {"superseded": str(old.id), "successor": str(new.id), "rule": SupersedeRule.MODEL}
    return Candidate(ProposalKind.SUPERSEDE, tuple(ids), payload, _rationale(p))


_BUILDERS: dict[str, Callable[[ModelProposal, list[uuid.UUID], Mapping[uuid.UUID, Known], int], Built]] = {
    ProposalKind.FORGET: _forget,
    ProposalKind.RESALIENCE: _resalience,
    ProposalKind.MERGE: _merge,
    ProposalKind.SUPERSEDE: _supersede,
}
_WHOLE = {ProposalKind.MERGE, ProposalKind.SUPERSEDE}  # dropped whole when any id is unknown


def validate_model_proposals(
    raw: Sequence[ModelProposal], known: Mapping[uuid.UUID, Known], *, max_chars: int
) -> tuple[list[Candidate], list[str]]:
    """The proposals that survive, and one reason per proposal dropped."""
    kept: list[Candidate] = []
    dropped: list[str] = []
    seen: set[tuple[str, frozenset[uuid.UUID]]] = set()
    for p in raw:
        kind = p.kind.strip().lower()
        if kind not in _BUILDERS:
            dropped.append("unknown kind")
            continue
        ids, unknown = _resolve(p.target_ids, known)
        if unknown and kind in _WHOLE:
            dropped.append(f"{kind} names an id that is not a live memory of the user")
            continue
        built = _BUILDERS[kind](p, ids, known, max_chars)
        if isinstance(built, str):
            dropped.append(built)
        elif built.key in seen:
            dropped.append("duplicate proposal")
        else:
            seen.add(built.key)
            kept.append(built)
    return kept, dropped
