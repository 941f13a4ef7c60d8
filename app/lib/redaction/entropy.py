"""Layer 3: a random-looking token that the words before it call a credential.

Layers 1 and 2 know a secret by its prefix or by the key right before it; what they miss is a value
with no shape of its own a few words after the word that names it ("the staging key, in case you need
it, is 9vQ2..."). This layer takes a token only when all of these hold:

- a credential word (key, token, secret, password, credential, auth, bearer, signature...) is within
  the 48 characters before it on the same line, and no identifier word (commit, sha, hash, uuid, id,
  order, version, build...) stands between that word and the token;
- it is 16 to 512 characters of the base64/hex/url-safe alphabet, with letters and digits both, and its
  Shannon entropy is at least 3 bits a character (a repeated or counted pattern is not random);
- it is not a UUID, a URL, or words joined by punctuation (``server2.key``, ``/etc/ssl/private``).

Ordinary ids elsewhere (a commit hash in a git sentence, an order number, a UUID) never meet the first
condition, so they survive.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from app.lib.redaction.rules import Rule, rule

KIND = "high_entropy_secret"
WINDOW = 48
MIN_ENTROPY = 3.0
_CONTEXT = re.compile(
    r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))(?i:(?:api[ _-]?)?(?:keys?|tokens?|secrets?|passw(?:or)?ds?"
    r"|passphrases?|passcodes?|pwd|pw|credentials?|creds|auth(?:orization|entication)?|bearer"
    r"|signatures?|sig|private|apikey))(?![a-z])"
)
_BLOCKER = re.compile(
    r"(?i)(?<![a-z])(?:commit|sha(?:1|256)?|hash|revision|rev|checksum|digest|uuid|guid|id|ids|order"
    r"|version|build|tx|txn|transaction|address|trace|request|file|path|url|image|container|tag"
    r"|git|checkout|cherry-pick|rebase|revert|merged?|branch)(?![a-z])"
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_SEGMENTS = re.compile(r"[-_./+~=]+")
# A word, a CamelCase identifier, an acronym or a small number: unambiguous alternatives (each
# CamelCase part starts at its capital), so a failed match backtracks in linear time.
_WORDY = re.compile(r"(?:[A-Z]?[a-z]+)(?:[A-Z][a-z]+)*[0-9]{0,3}|[A-Z]{1,6}[0-9]{0,3}|[0-9]{1,4}|")


def entropy(token: str) -> float:
    """Shannon entropy of ``token``, in bits per character."""
    counts = Counter(token)
    size = len(token)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def random_looking(token: str) -> bool:
    """Letters and digits both, not a UUID, not punctuated words, and entropy of 3 bits a char or more."""
    if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        return False
    if _UUID.fullmatch(token) or all(_WORDY.fullmatch(s) for s in _SEGMENTS.split(token)):
        return False
    if _HEX.fullmatch(token) and len(token) < 20:
        return False
    return entropy(token) >= MIN_ENTROPY


def _in_credential_context(text: str, start: int) -> bool:
    window_start = max(0, start - WINDOW)
    line_start = text.rfind("\n", window_start, start) + 1
    window = text[max(window_start, line_start) : start]
    last = None
    for last in _CONTEXT.finditer(window):  # noqa: B007 - the last credential word is the one that counts
        pass
    return last is not None and _BLOCKER.search(window, last.end()) is None


def _classify(match: re.Match[str]) -> str | None:
    token = match.group(0)
    start = match.start()
    if token.startswith("//") and match.string[start - 1 : start] == ":":
        return None  # a URL: its credentials are layer 1's, its query parameters layer 2's
    if not random_looking(token):
        return None
    return KIND if _in_credential_context(match.string, start) else None


RULES: tuple[Rule, ...] = (
    rule(
        r"(?<![A-Za-z0-9+/_=.~\[-])[A-Za-z0-9+/_=~-](?:[A-Za-z0-9+/_=.~-]{14,510}[A-Za-z0-9+/_=~-])"
        r"(?![A-Za-z0-9+/_=~-]|\.+[A-Za-z0-9+/_=~-])",
        _classify,
        needles=("key", "token", "secret", "pass", "pw", "cred", "auth", "bearer", "sig", "private"),
    ),
)
