"""Whether a question asks for advice or a plan ("suggest a dinner dish", "what should I cook?"), by
rule, no model.

Recall lets the user's constraints ("I am strictly vegetarian", "I am allergic to peanuts") into such a
context whatever its words, within the standing share (app.memory.packing): advice that ignores them
is wrong. A question that asks for a fact ("what is my cat's name?") does not get them below the floor:
a constraint does not answer it, and a context of constraints where nothing was ever said is not an
abstention (docs/RANKING.md measures both).
"""

from __future__ import annotations

import re

_ADVICE = re.compile(
    r"\b(?:"
    r"suggest(?:ion)?s?|recommend(?:ation)?s?|advi[cs]e|ideas?|tips?|plan(?:s|ning)?|propose"
    r"|itinerary|menu|recipes?|options?\s+for"
    r"|what\s+(?:should|shall|could|can)\s+(?:i|we)|should\s+(?:i|we)|shall\s+(?:i|we)"
    r"|what\s+(?:to|would\s+you)\s+(?:\w+\s+)?(?:cook|eat|make|buy|order|wear|do|book|try|pick|choose)"
    r"|help\s+me\s+(?:to\s+)?(?:choose|pick|plan|decide|find|organi[sz]e|prepare|cook)"
    r"|(?:can|could)\s+you\s+(?:make|cook|book|find|pick|choose|prepare|organi[sz]e)"
    r"|how\s+(?:should|do|can)\s+(?:i|we)"
    r")\b",
    re.IGNORECASE,
)


def asks_for_advice(query: str) -> bool:
    """True when the question asks what to do, choose or make (a suggestion, a plan, a recipe)."""
    return _ADVICE.search(query) is not None
