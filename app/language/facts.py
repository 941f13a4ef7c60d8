"""Facts from one clause: its type and slot by the first matching rule, a correction's stale value,
its timing, and the content as the user's own sentence lightly normalised (see app.language.analysis)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from app.language import rules
from app.language.rules import normalise_subject

_SOFT_TYPES = frozenset({"fact", "preference", "decision", "identity"})
_TEMPORARY_CAPABLE = frozenset({"fact", "preference", "constraint", "identity", "decision", "temporary"})
_DEADLINE_CAPABLE = frozenset({"task", "fact", "decision", "project", "deadline"})


@dataclass(frozen=True, slots=True)
class FactIntent:
    """One memory to store. ``subject`` is the slot ("theme", "dinner budget") or None (not a slot);
    ``previous_value`` is the replaced value of a correction; ``expires_hint`` is a bare time phrase."""

    content: str
    type: str
    subject: str | None
    importance: float
    confidence: float
    is_correction: bool = False
    previous_value: str | None = None
    expires_hint: str | None = None
    # How the slot was found: "vocabulary" (a well-known attribute: "I live in" -> home city, vim ->
    # editor), "named" (the user calls it theirs: "my car is ..."), "described" (a thing the sentence
    # names: "the staging database runs on ..."), "object" (the noun phrase of a like or preference:
    # "I love hiking" -> hiking), "context" (an earlier sentence's slot); None: no slot.
    subject_basis: str | None = None


@dataclass(slots=True)
class ClauseState:
    """What earlier parts of the message say about the current clause."""

    explicit: bool = False
    correction: bool = False
    carry_correction: bool = False  # a marker-only sentence ("I changed my mind.") flags the next
    label: str | None = None
    last_subject: str | None = None


@dataclass(slots=True)
class _Draft:
    text: str
    type: str
    subject: str | None
    correction: bool
    previous: str | None
    explicit: bool
    basis: str | None = None


def clause_facts(body: str, state: ClauseState) -> list[FactIntent]:
    if m := rules.REMIND_TO.match(body):
        body = f"I need to {m['rest']}"
    elif m := rules.REMEMBER_TO.match(body):
        rest, state.explicit = body[m.end() :], True
        body = rest if re.match(r"(?:never|always)\b", rest, re.IGNORECASE) else f"I need to {rest}"
    text, previous, corrected = _correction(body)
    draft = _draft(text, previous, corrected or state.correction, state)
    if draft is None:
        return []
    drafts = _split_list(draft) if draft.type == "preference" else [draft]
    return [_finalise(d, state) for d in drafts]


def _correction(body: str) -> tuple[str, str | None, bool]:
    """(text without the stale value, the stale value, whether this corrects an earlier value)."""
    corrected = bool(rules.CORRECTION_CUE.search(body))
    if m := rules.NOT_ANYMORE_LEAD.match(body):
        return m["rest"], rules.clean_value(m["prev"]), True
    text, previous = body, None
    for pattern, replacement in rules.STALE_PATTERNS:
        m = pattern.search(text)
        if m and text[: m.start()].strip():
            previous = previous or rules.clean_value(m["prev"])
            text = f"{text[: m.start()]}{replacement}{text[m.end() :]}".strip()
            corrected = True
    if previous is None:
        for pattern in (rules.NOT_ANYMORE, rules.STOP_VERB):
            if m := pattern.search(text):
                previous, corrected = rules.clean_value(m["prev"]), True
                break
    return text, previous, corrected


def _draft(text: str, previous: str | None, corrected: bool, state: ClauseState) -> _Draft | None:
    for rule in rules.RULES:
        if m := rule.pattern.search(text):
            subject, basis = _subject(rule, m, text)
            type_ = rule.type
            if type_ == "episodic" and corrected:
                type_ = "fact"
            explicit = rule.subject in {"slot", "fixed:name"}
            return _Draft(text, type_, subject, corrected, previous, explicit, basis if subject else None)
    if corrected and (resolved := _resolve_short_correction(text, previous, state)):
        return resolved
    if not rules.is_declarative(text):
        return None
    return _Draft(text, "fact", None, corrected, previous, False)


def _resolve_short_correction(text: str, previous: str | None, state: ClauseState) -> _Draft | None:
    """ "it's X" / "X, not Y" after a correction marker: name the slot when it is known."""
    value, prev = None, previous
    if m := rules.IT_IS.match(text):
        value = rules.clean_value(m["value"])
    elif (m := rules.X_NOT_Y.match(text)) and state.correction:
        value, prev = rules.clean_value(m["new"]), rules.clean_value(m["prev"])
    if not value:
        return None
    category = rules.category_of(value)
    subject = category or state.last_subject
    content = f"The {subject} is {value}" if subject else text
    basis = "vocabulary" if category else "context" if subject else None
    return _Draft(content, "fact", subject, True, prev, False, basis)


def _finalise(draft: _Draft, state: ClauseState) -> FactIntent:
    type_, subject = draft.type, draft.subject
    if state.label and not (state.label == "constraint" and type_ == "critical_rule"):
        type_ = state.label
    if subject is not None and type_ in _SOFT_TYPES:
        type_ = rules.SUBJECT_TYPES.get(subject, type_)
    type_, timed_subject, hint = _timing(draft.text, type_, subject)
    basis = draft.basis if timed_subject == subject else "named" if timed_subject else None
    subject = timed_subject
    importance = rules.IMPORTANCE[type_]
    if rules.INTENSIFIERS.search(draft.text):
        importance = min(1.0, importance + rules.INTENSITY_BUMP)
    explicit = state.explicit or draft.explicit
    return FactIntent(
        content=_content(draft.text, subject, type_),
        type=type_,
        subject=subject,
        importance=round(importance, 2),
        confidence=rules.EXPLICIT_CONFIDENCE if explicit else rules.INFERRED_CONFIDENCE,
        is_correction=draft.correction,
        previous_value=draft.previous,
        expires_hint=hint,
        subject_basis=basis,
    )


def _timing(text: str, type_: str, subject: str | None) -> tuple[str, str | None, str | None]:
    """Deadlines and temporary facts: (type, subject, expires_hint)."""
    if type_ in _DEADLINE_CAPABLE and (m := _deadline_hint(text, type_)):
        return (
            "deadline",
            rules.deadline_subject(text) or (subject if type_ == "deadline" else None),
            m["when"],
        )
    m = rules.TEMPORARY_HINT.search(text)
    if type_ == "task":
        return (
            type_,
            subject,
            (m["until"] or m["when"]) if m else rules.group_of(rules.DATE_ANY.search(text), "when"),
        )
    if type_ in _TEMPORARY_CAPABLE and (m or type_ == "temporary"):
        return "temporary", None, (m["until"] or m["when"]) if m else None
    return type_, subject, None


def _deadline_hint(text: str, type_: str) -> re.Match[str] | None:
    """The date that makes a memory a deadline, if one does. A plain fact needs a word of commitment
    beside its date (`rules.COMMITMENT`: "need to", "due", "deadline", "goal"...): a deadline expires
    after its date and leaves recall then, so a report typed as one ("I've completed 40% of it by March
    15", "I'm worried my $12.99/month plan won't be enough by March 30") would lose what it says, while
    a deadline typed as a fact only stays in recall longer, fading as facts do. The word and the date
    must be in the same part of a sentence that a relative clause ("which", "who", ...) continues."""
    if type_ != "fact":
        return rules.DEADLINE_HINT.search(text) or _deadline_date(text, type_)
    # The commitment and the date in one part: a relative clause says its own thing of what it follows
    # ("I've logged 3,600 words by March 3, which is 72% of my weekly target" reports progress).
    for part in rules.RELATIVE_CLAUSE.split(text):
        if rules.COMMITMENT.search(part) and (
            m := rules.DEADLINE_HINT.search(part) or _deadline_date(part, type_)
        ):
            return m
    return None


def _deadline_date(text: str, type_: str) -> re.Match[str] | None:
    if type_ == "deadline" or re.search(r"\b(?:deadline|due)\b", text, re.IGNORECASE):
        return rules.DATE_ANY.search(text)
    return None


def _content(text: str, subject: str | None, type_: str) -> str:
    body = re.sub(r"\s+", " ", text).strip(" ,;:-")
    body = body[:1].upper() + body[1:]
    body = body.rstrip("!?") or body
    if not body.endswith("."):
        body += "."
    if subject and type_ != "temporary" and not _mentions(body, subject):
        body = f"{body[:-1]} ({subject})."
    return body


def _mentions(body: str, subject: str) -> bool:
    lowered = body.lower()
    return any(re.search(rf"\b{re.escape(word)}", lowered) for word in subject.split() if len(word) > 1)


# --- subjects ---------------------------------------------------------------------------------


def _subject(rule: rules.Rule, m: re.Match[str], text: str) -> tuple[str | None, str]:
    """(the slot, how it was found: see `FactIntent.subject_basis`)."""
    kind = rule.subject
    if kind.startswith("fixed:"):
        return kind.removeprefix("fixed:"), "vocabulary"
    if kind in {"slot", "switch"} and (slot := rules.group(m, "subj")):
        return normalise_subject(slot) or None, _named(m, text)
    if kind == "diet":
        return rules.DIET_SUBJECTS.get((rules.group(m, "diet", "diet2") or "").lower()), "vocabulary"
    if kind == "allergy":
        return _allergy_subject(m), "vocabulary"
    if kind == "relhome":
        return f"{normalise_subject(m['rel'])} home city", "vocabulary"
    obj = rules.group(m, "obj", "obj2", "obj3")
    if kind == "role":
        head = rules.noun_head(obj)
        return ("occupation" if head and rules.ROLE_HEAD.search(head) else None), "vocabulary"
    if kind in {"category", "switch"}:
        if category := rules.category_of(text):
            return category, "vocabulary"
        if scope := rules.scope_of(text):
            return scope, "described"
        subj = rules.group(m, "subj")
        return (normalise_subject(subj) or None if subj else None), _named(m, text)
    if kind in {"head", "thing"}:
        if found := rules.category_of(obj or text):
            return found, "vocabulary"
        return (rules.noun_head(obj) if kind == "head" else rules.noun_phrase(obj)), "object"
    return None, "none"


def _named(m: re.Match[str], text: str) -> str:
    """ "named" when the user calls the attribute theirs ("my car", "our budget"), else "described"
    ("the staging database runs on ...": a thing, not an attribute of the user)."""
    if "subj" not in m.re.groupindex or m["subj"] is None:
        return "described"
    before = text[: m.start("subj")].lower()
    own = re.search(r"\b(?:my|our)\s+(?:favou?rite\s+|preferred\s+)?$", before) or re.match(
        r"(?:my|our)\s", m["subj"].lower()
    )
    return "named" if own else "described"


def _allergy_subject(m: re.Match[str]) -> str | None:
    allergen = rules.noun_phrase(rules.group(m, "obj", "obj2"))
    relation = normalise_subject(m["rel"]) if m["rel"] else ""
    return f"{relation} {allergen} allergy".strip() if allergen else None


def _split_list(draft: _Draft) -> list[_Draft]:
    """ "I prefer A backend, B frontend and C deployment" -> one preference per distinct slot."""
    m = re.search(r"\b(?:prefer|like|love|favou?r)\s+(?P<items>.+)$", draft.text, re.IGNORECASE)
    if m is None:
        return [draft]
    items = [i for i in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", m["items"].rstrip(" .!")) if i]
    subjects = [rules.category_of(i) or rules.noun_head(i) for i in items]
    known = {s for s in subjects if s in rules.SUBJECT_TYPES}
    if len(items) < 2 or len(known) < 2 or len(known) < sum(s in rules.SUBJECT_TYPES for s in subjects):
        return [draft]
    prefix = draft.text[: m.start("items")]
    return [
        replace(
            draft,
            text=f"{prefix}{item}",
            subject=s,
            basis="vocabulary" if rules.category_of(item) else "object",
        )
        for item, s in zip(items, subjects, strict=True)
    ]
