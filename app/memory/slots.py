"""Slot keys: subject normalisation and content hashing.

A slot is (user, project, subject, type): at most one current memory lives in it. Generic subjects
("user", "me", "general", ...) name nobody's attribute in particular, so they are not slots; treating
them as slots is how other services let "I am vegan" wipe out "my budget is 30 dollars".
"""

from __future__ import annotations

import hashlib
import re

GENERIC_SUBJECTS = frozenset(
    {
        "",
        "user",
        "the user",
        "me",
        "i",
        "myself",
        "self",
        "you",
        "we",
        "us",
        "general",
        "misc",
        "miscellaneous",
        "other",
        "info",
        "information",
        "fact",
        "facts",
        "note",
        "notes",
        "memory",
        "memories",
        "preference",
        "preferences",
        "personal",
        "profile",
        "about me",
        "stuff",
        "thing",
        "things",
        "context",
        "unknown",
        "none",
        "null",
        "n/a",
        "default",
        "everything",
        "anything",
    }
)
_LEADING_WORDS = re.compile(r"^(?:(?:my|our|the|a|an|your|their|his|her|user's|users')\s+)+")
_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\s\"'`.,;:!?()\[\]{}-]+|[\s\"'`.,;:!?()\[\]{}-]+$")


def normalise_subject(raw: str | None) -> str | None:
    """The slot key for a subject, or None when the subject is generic (not a slot)."""
    if raw is None:
        return None
    subject = _SPACES.sub(" ", raw.strip().lower().replace("_", " "))
    subject = _EDGE_PUNCT.sub("", subject)
    subject = _LEADING_WORDS.sub("", subject).strip()
    if subject in GENERIC_SUBJECTS or len(subject) < 2:
        return None
    return subject[:200]


def normalise_content(content: str) -> str:
    """Content as compared for dedupe: case, spacing and trailing punctuation do not matter."""
    return _EDGE_PUNCT.sub("", _SPACES.sub(" ", content.strip().lower()))


def content_hash(content: str) -> str:
    """Dedupe key of a memory's content."""
    return hashlib.sha256(normalise_content(content).encode()).hexdigest()


def slot_lock_key(tenant: str, user_id: str, project_id: str | None, subject: str, mtype: str) -> str:
    """The text that `pg_advisory_xact_lock(hashtextextended(...))` serialises writes on."""
    return "\x1f".join(("slot", tenant, user_id, project_id or "", subject, mtype))


def hash_lock_key(tenant: str, user_id: str, project_id: str | None, digest: str) -> str:
    """Serialises concurrent writes of the same content in one scope (dedupe without a slot)."""
    return "\x1f".join(("hash", tenant, user_id, project_id or "", digest))
