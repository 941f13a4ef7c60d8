"""Rule-based analysis of a user message: what to remember, what to forget, what to recall.

This is the deterministic heart of the offline model and the offline extractor. It needs no model,
no network and no database: text in, structured intents out. The pattern tables live in
:mod:`app.language.rules`; this module walks a message sentence by sentence and clause by
clause:

1. chit-chat ("thanks!") yields nothing;
2. a forget request ("forget my theme preference") yields a :class:`ForgetIntent`;
3. a question or a request for advice ("what should I cook?", "suggest a dish") becomes the
   recall ``question`` and never a fact; the user's circumstances it gives as its reason ("...,
   given that I am vegetarian?", "..., considering I'm using Flask 2.3.1") are read as a statement;
4. anything else is stripped of its explicit cue ("remember that"), label ("Temporary:") and
   correction marker ("actually,"), then the first matching rule decides type and subject.

A fact's ``content`` is the user's own sentence lightly normalised: cues removed, the stale value
of a correction dropped ("I live in Porto now, not Valencia" -> "I live in Porto now."; the old
value goes to ``previous_value``), and the slot named in brackets when the sentence does not
mention it ("I prefer dark mode (theme)."). ``expires_hint`` is a bare time expression for the
service to resolve: "today", "for now", "this week", "Friday", "next Monday", "2026-12-05".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from app.language import rules
from app.language.facts import ClauseState, FactIntent, clause_facts
from app.language.rules import normalise_subject

__all__ = [
    "MEMORY_TYPES",
    "Analysis",
    "FactIntent",
    "ForgetIntent",
    "analyse",
    "extract_facts",
    "normalise_subject",
]

MEMORY_TYPES: tuple[str, ...] = tuple(rules.IMPORTANCE)
_USER_ROLES = frozenset({"user", "human"})


@dataclass(frozen=True, slots=True)
class ForgetIntent:
    """What to forget, as the user named it ("my address"), and its slot when recognisable."""

    description: str
    subject: str | None


@dataclass(frozen=True, slots=True)
class Analysis:
    facts: tuple[FactIntent, ...]
    forgets: tuple[ForgetIntent, ...]
    question: str | None
    is_greeting_or_chitchat: bool


@dataclass(slots=True)
class _Out:
    facts: list[FactIntent] = field(default_factory=list)
    forgets: list[ForgetIntent] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    substantive: bool = False


# --- public API -------------------------------------------------------------------------------


def analyse(message: str) -> Analysis:
    """Facts to store, things to forget and the recall question in one user message."""
    return _analyse(message, None)[0]


def extract_facts(messages: Sequence[tuple[str, str]]) -> list[FactIntent]:
    """Facts stated by the user across (role, content) turns, in order; later restatements win."""
    facts: list[FactIntent] = []
    last_subject: str | None = None
    for role, content in messages:
        if role.strip().lower() not in _USER_ROLES:
            continue  # assistant turns may confirm, never create
        analysis, last_subject = _analyse(content, last_subject)
        facts.extend(analysis.facts)
    latest: dict[str, int] = {f.content.casefold(): i for i, f in enumerate(facts)}
    return [f for i, f in enumerate(facts) if latest[f.content.casefold()] == i]


# --- message structure ------------------------------------------------------------------------


def _analyse(message: str, prior_subject: str | None) -> tuple[Analysis, str | None]:
    out = _Out()
    state = ClauseState(last_subject=prior_subject)
    for sentence in _sentences(rules.clean_text(message)):
        state.explicit, state.label = False, None
        state.correction, state.carry_correction = state.carry_correction, False
        clauses = _clauses(sentence)
        asked = [_process_clause(clause, state, out) for clause in clauses]
        if len(clauses) > 1 and all(asked):  # "Pick one and remind me of my budget": ask it whole
            out.questions[-len(clauses) :] = [sentence]
    question = " ".join(out.questions) or None
    chit = not (out.facts or out.forgets or question or out.substantive)
    return Analysis(tuple(out.facts), tuple(out.forgets), question, chit), state.last_subject


def _sentences(text: str) -> list[str]:
    merged: list[str] = []
    for piece in rules.SENTENCE_SPLIT.split(text):
        if merged and merged[-1].lower().endswith(rules.ABBREVIATIONS):
            merged[-1] = f"{merged[-1]} {piece}"
        elif piece and piece.strip():
            merged.append(piece.strip())
    return merged


def _clauses(sentence: str) -> list[str]:
    parts = [sentence]
    for pattern, min_words, left_start in rules.CLAUSE_SPLITS:
        split: list[str] = []
        for part in parts:
            start = 0
            for m in pattern.finditer(part):
                left = part[start : m.start()]
                if len(left.split()) >= min_words and (left_start is None or left_start.match(left)):
                    split.append(part[start : m.start()])
                    start = m.end()
            split.append(part[start:])
        parts = split
    return [p.strip(" ,") for p in parts if p.strip(" ,")]


def _process_clause(raw: str, state: ClauseState, out: _Out) -> bool:
    """Record what one clause says; True when it is a question."""
    clause = rules.INTERJECTIONS.sub("", raw).strip(" ,")
    if rules.is_chitchat(clause):
        return False
    out.substantive = True
    handled, forget = _forget(clause)
    if handled:
        out.forgets.extend([forget] if forget else [])
    elif _is_question(clause):
        out.questions.append(clause)
        if stated := rules.REASON_IN_QUESTION.search(clause):
            _process_clause(stated["stated"], state, out)
        return True
    elif (emphasis := rules.EMPHASIS.match(clause)) and out.facts:
        out.facts[-1] = _emphasise(out.facts[-1], emphasis["level"].lower())
    elif body := _strip_prefixes(clause, state):
        for fact in clause_facts(body, state):
            out.facts.append(fact)
            state.last_subject = fact.subject or state.last_subject
    else:  # a marker-only sentence ("I changed my mind.") flags the next one
        state.carry_correction = state.carry_correction or state.correction
    return False


def _is_question(clause: str) -> bool:
    if rules.REMEMBER_REQUEST.match(clause):
        return False
    return clause.endswith("?") or bool(
        rules.QUESTION_START.match(clause) or rules.REQUEST_START.match(clause)
    )


def _strip_prefixes(clause: str, state: ClauseState) -> str:
    """Remove "remember that", "Temporary:", "actually," (in any order) and record what they meant."""
    body = clause
    for _ in range(6):
        if (m := rules.REMEMBER_PREFIX.match(body)) and m.end():
            state.explicit = True
        elif m := rules.LABEL_PREFIX.match(body):
            label = re.sub(r"\s+", " ", m["label"].lower())
            if rules.CORRECTION_LABEL.match(label):
                state.correction = True
            else:
                state.label, state.explicit = rules.LABELS[label] or state.label, True
                if label in rules.KEEP_LABEL_TEXT:
                    break
        elif m := rules.CORRECTION_MARKER.match(body):
            state.correction = True
        else:
            break
        body = body[m.end() :]
    return body.strip(" ,.;:-")


def _emphasise(fact: FactIntent, level: str) -> FactIntent:
    if level == "important":
        return replace(fact, importance=min(1.0, fact.importance + 0.1))
    critical = (
        "critical_rule" if fact.type in {"constraint", "fact", "decision", "critical_rule"} else fact.type
    )
    subject = None if critical == "critical_rule" else fact.subject
    return replace(fact, type=critical, subject=subject, importance=max(fact.importance, 0.95))


# --- forgetting -------------------------------------------------------------------------------


def _forget(clause: str) -> tuple[bool, ForgetIntent | None]:
    """(is this a forget request, the intent). A bare "remove it" is handled but names nothing."""
    text = clause.rstrip(" .!?")
    for index, pattern in enumerate(rules.FORGET_PATTERNS):
        m = pattern.search(text)
        if m is None:
            continue
        obj = rules.group(m, "obj", "obj2") or ""
        description = obj.strip()
        for cleanup in rules.FORGET_CLEANUP:
            description = cleanup.sub("", description).strip(" ,.")
        if description.lower() in rules.PRONOUN_ONLY:
            return True, None  # "remove it": the thing was named in another clause
        if description.lower() in rules.ABOUT_ME:
            return True, ForgetIntent("everything", None)
        if index == 0 and m["verb"].lower() != "forget" and not rules.MEMORY_OBJECT.search(obj):
            return False, None
        return True, ForgetIntent(description, _forget_subject(description))
    return False, None


def _forget_subject(description: str) -> str | None:
    if re.match(r"(?:i|we|i'm|we're|my\s+\w+\s+(?:is|are))\b", description, re.IGNORECASE):
        facts = clause_facts(description, ClauseState())
        return facts[0].subject if facts else None
    return normalise_subject(description) or None
