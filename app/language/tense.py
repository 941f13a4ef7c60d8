"""Whether a question asks about the past ("what did we use before Next.js?"), by rule, no model.

Recall answers such a question from the superseded memories too. The rules read English:

1. A cue that speaks of the past wherever it stands: "used to" (not "am used to"), "previous(ly)",
   "former(ly)", "originally" / "the original", "in the past", "back then" / "back when", "at first",
   "before that", "ago", "last March" / "last year" (a month, season or unit of time; not "last name"),
   and an old thing of someone's ("my old address"; not "how old", not "the old server").
2. "before", "until", "earlier" or "when I was" only together with a past verb in the question ("did",
   "was", "had", "we switched"...): "what should I do before the meeting?" is about now.

A question in the present keeps the present, whatever its words: "what do we use now?", "did I tell you
where I live?" (a past verb, no cue), "what was the wifi password again?" (the colloquial past, no cue).
"Before I forget, ..." and the like are a way of speaking, not a time: they are read past as if absent.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE
_PERSON = r"(?:i|we|you|he|she|they|it)"
_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
)
_UNITS = r"year|month|week|weekend|summer|winter|spring|autumn|fall|semester|season|time|night"

# Cues that put a question in the past by themselves.
_PAST_CUES = re.compile(
    r"\b(?:"
    rf"used\s+to|did\s+{_PERSON}\s+use\s+to"
    r"|previous(?:ly)?|former(?:ly)?|originally|the\s+original|in\s+the\s+past|back\s+(?:then|when)"
    r"|at\s+first|before\s+(?:that|then)|ago"
    rf"|last\s+(?:{_MONTHS}|{_UNITS})"
    r"|(?:my|our|your|his|her|their)\s+old(?=\s+\w)"
    r")\b",
    _I,
)
# Cues that need a past verb beside them: "before X", "until 2020", "earlier", "when I was".
_TIME_CUES = re.compile(rf"\b(?:before|until|till|earlier|when\s+{_PERSON}\s+(?:was|were))\b", _I)
_PAST_VERBS = re.compile(
    r"\b(?:did|was|were|had|went|ate|drank|drove|wore|took|made|got|left|chose|began|came|became|"
    r"bought|paid|spent|kept|held|knew|thought|grew|ran|wrote)\b"
    rf"|\b{_PERSON}\s+(?:\w+ly\s+)?\w+[^e\W]ed\b",  # "we switched"; not "we need"
    _I,
)
# "am I used to", "I'm getting used to" (accustomed), "is this tool used to" (a purpose): not the past.
_ACCUSTOMED = re.compile(
    rf"(?:\b(?:am|is|are|be|been|being|get|gets|got|getting)|'m|'re)\s+(?:(?:{_PERSON}|(?:this|that|the|these|those|a|an)\s+\w+)\s+)?(?:getting\s+)?used\s+to\b",
    _I,
)
# "before I forget", "before we start": a way of speaking, not a time.
_DISCOURSE = re.compile(
    rf"\bbefore\s+{_PERSON}\s+(?:forget|start|begin|go\s+on|continue|answer|reply|proceed|dive\s+in)\b,?",
    _I,
)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # "Next.js" stays one word


def asks_about_past(query: str) -> bool:
    """True when `query` asks what held before now (see the module's rules). In a message that asks
    something ("I moved here last month. Any dinner ideas?") only its questions are read: a statement
    about the past asks nothing about it."""
    text = query.replace("\u2019", "'")
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    questions = [s for s in sentences if s.rstrip().endswith("?")]
    return any(_past(s) for s in questions or sentences)


def _past(sentence: str) -> bool:
    text = _ACCUSTOMED.sub(" ", _DISCOURSE.sub(" ", sentence))
    if _PAST_CUES.search(text):
        return True
    return bool(_TIME_CUES.search(text) and _PAST_VERBS.search(text))
