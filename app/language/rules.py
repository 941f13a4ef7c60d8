"""Pattern tables for the rule-based message analyser (:mod:`app.language.analysis`).

Everything here is data: word lists, synonym tables and compiled regular expressions. The
analyser walks the ordered :data:`RULES` table and the first rule whose pattern matches a
clause decides the memory type and *how* the subject (slot) is derived.

Subject strategies (``Rule.subject``):

- ``none``: never a slot (additive facts such as "I never take calls after 6pm", rules).
- ``fixed:<slot>``: a fixed slot, e.g. ``fixed:home city``.
- ``slot``: the ``subj`` group, normalised ("my dinner budget is ..." -> "dinner budget").
- ``category``: the category of the first known tool/term in the clause (vim -> editor), else
  a "for the X" / "as my X" scope phrase, else ``None``.
- ``switch``: the ``subj`` group ("I switched my editor to ...") when present, else ``category``.
- ``head``: the category of the object, else the noun head of the ``obj`` group.
- ``thing``: the category of the object, else its whole noun phrase (likes/dislikes:
  "I hate marzipan" -> "marzipan", so a later "I like marzipan now" replaces it).
- ``diet``: the slot of the diet/condition word in the ``diet`` group (vegan -> diet).
- ``allergy``: "<relation> <allergen> allergy" from the ``rel``/``obj`` groups.
- ``relhome``: "<relation> home city" from the ``rel`` group.
- ``role``: "occupation" when the ``obj`` head looks like a role ("engineer"), else ``None``.

The module ends with small text helpers (``normalise_subject``, ``category_of``, ``noun_head``,
``clean_value``...): pure functions over these tables.

A slot is (subject, type), so one attribute must always get the same type whatever the sentence
shape: :data:`SUBJECT_TYPES` gives the canonical type of the well-known subjects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_I = re.IGNORECASE

IMPORTANCE: Final[dict[str, float]] = {
    "critical_rule": 0.95,
    "constraint": 0.85,
    "identity": 0.8,
    "deadline": 0.8,
    "decision": 0.75,
    "mistake": 0.7,
    "project": 0.7,
    "preference": 0.6,
    "task": 0.6,
    "learning_goal": 0.6,
    "fact": 0.5,
    "temporary": 0.3,
    "episodic": 0.3,
}
EXPLICIT_CONFIDENCE: Final = 0.9
INFERRED_CONFIDENCE: Final = 0.7
INTENSITY_BUMP: Final = 0.05
INTENSIFIERS: Final = re.compile(
    r"\b(?:strictly|severely|absolutely|critical|crucial|important|hard\s+cap|non-negotiable|"
    r"seriously|under\s+no\s+circumstances|exclusively|really|completely)\b",
    _I,
)

# --- subjects ---------------------------------------------------------------------------------

# canonical slot <- phrasings of the same attribute (keys are lower-case, hyphens as spaces)
_SYNONYM_GROUPS: Final[dict[str, tuple[str, ...]]] = {
    "theme": ("ui theme", "color scheme", "colour scheme", "colour theme", "color theme", "appearance"),
    "frontend framework": (
        "frontend",
        "front end",
        "front end framework",
        "frontend stack",
        "ui framework",
        "ui stack",
    ),
    "backend framework": (
        "backend",
        "back end",
        "api",
        "back end framework",
        "api framework",
        "backend stack",
        "web framework",
        "server framework",
    ),
    "database": ("db", "storage", "datastore", "data store"),
    "cloud provider": ("cloud", "hosting", "deployment", "deployment target", "hosting provider"),
    "test framework": ("testing", "test", "test runner", "testing framework"),
    "programming language": ("language",),
    "editor": ("text editor", "code editor", "ide"),
    "response style": ("answer", "reply", "response", "answer style", "answer format", "response format"),
    "home city": ("city", "home"),
    "hometown": ("home town",),
    "wifi network": ("wifi", "wi fi", "wifi name", "wi fi network"),
    "indentation": ("indent", "indent style"),
    "diet": ("dietary preference", "dietary restriction"),
    "color": ("colour",),
}
SUBJECT_SYNONYMS: Final[dict[str, str]] = {
    phrase: canonical for canonical, phrases in _SYNONYM_GROUPS.items() for phrase in phrases
}
# the canonical memory type of well-known slots (applied to fact/preference/decision/identity)
SUBJECT_TYPES: Final[dict[str, str]] = {
    **dict.fromkeys(
        (
            "theme",
            "editor",
            "indentation",
            "shell",
            "response style",
            "programming language",
            "drink",
            "color",
            "colour",
        ),
        "preference",
    ),
    # A diet gates decisions like any constraint; corrections of it must land in the same slot.
    "diet": "constraint",
    **dict.fromkeys(
        (
            "frontend framework",
            "backend framework",
            "database",
            "cloud provider",
            "package manager",
            "test framework",
        ),
        "decision",
    ),
    **dict.fromkeys(
        (
            "name",
            "age",
            "birthday",
            "pronoun",
            "email",
            "phone",
            "phone number",
            "address",
            "occupation",
            "employer",
            "timezone",
            "nationality",
            "home city",
            "hometown",
        ),
        "identity",
    ),
}
# words stripped from the end of a subject phrase ("theme preference" -> "theme")
GENERIC_TAILS: Final = frozenset(
    [
        "preference",
        "preferences",
        "info",
        "information",
        "details",
        "data",
        "memory",
        "memories",
        "fact",
        "facts",
        "note",
        "notes",
        "record",
        "records",
        "setting",
        "settings",
        "habit",
        "hobby",
        "opinion",
        "opinions",
        "choice",
        "stuff",
        "thing",
        "things",
    ]
)
LEADING_NOISE: Final = frozenset(
    [
        "my",
        "our",
        "the",
        "a",
        "an",
        "your",
        "his",
        "her",
        "their",
        "this",
        "that",
        "these",
        "those",
        "user's",
        "users'",
        "favourite",
        "favorite",
        "preferred",
        "current",
        "new",
        "old",
        "really",
        "absolutely",
        "very",
    ]
)
INVARIANT_PLURALS: Final = frozenset(
    [
        "aws",
        "news",
        "series",
        "species",
        "physics",
        "mathematics",
        "analytics",
        "gas",
        "kubernetes",
        "postgres",
        "windows",
        "macos",
        "ios",
        "glasses",
        "jeans",
        "pants",
        "shorts",
        "scissors",
        "chess",
        "lens",
        "always",
        "sometimes",
    ]
)

# the category of a recognisable value ("vim" -> editor); the first mention in a clause wins
_CATEGORY_TERMS: Final[dict[str, str]] = {
    "theme": r"(?:dark|light)(?:\s+\w+)?\s+(?:mode|theme|ui|interface|background)|solarized|dracula|"
    r"high[\s-]contrast|monokai",
    "editor": r"n?vim|neovim|emacs|vs\s?code|visual\s+studio\s+code|helix|sublime(?:\s+text)?|intellij|"
    r"pycharm|nano|webstorm",
    "indentation": r"tabs|spaces|(?:two|four|2|4)[-\s]space\s+indent\w*",
    "shell": r"zsh|bash|fish\s+shell|powershell|nushell",
    "frontend framework": r"react(?:\.js)?|vue(?:\.js)?|svelte(?:kit)?|angular|next\.?js|nuxt|vite|"
    r"solid\.js|ember\.js",
    "backend framework": r"fastapi|flask|django|express(?:\.js|js)|rails|spring\s+boot|laravel|litestar|"
    r"nest\.?js|actix",
    "database": r"postgres(?:ql)?|mysql|sqlite|mongo(?:db)?|mariadb|dynamodb|cassandra|cockroachdb",
    "cloud provider": r"aws|amazon\s+web\s+services|azure|gcp|google\s+cloud|alibaba\s+cloud|aliyun|"
    r"heroku|vercel|netlify|digitalocean|fly\.io|cloudflare",
    "package manager": r"npm|pnpm|yarn|pip|poetry|conda",
    "test framework": r"pytest|jest|vitest|unittest|cypress|playwright|rspec|junit",
    "programming language": r"python|rust|golang|typescript|javascript|java|kotlin|c\+\+|c#|ruby|php|"
    r"swift|scala|haskell|elixir|clojure|ocaml|zig",
}
CATEGORY_PATTERNS: Final = tuple(
    (re.compile(rf"(?<![\w.+#-])(?:{terms})(?![\w+#-])", _I), subject)
    for subject, terms in _CATEGORY_TERMS.items()
)
# diet words -> slot; medical conditions are their own slots so they never replace a diet
DIET_SUBJECTS: Final[dict[str, str]] = {
    **dict.fromkeys(
        (
            "vegan",
            "vegetarian",
            "pescatarian",
            "pescetarian",
            "keto",
            "ketogenic",
            "paleo",
            "carnivore",
            "flexitarian",
            "halal",
            "kosher",
            "plant-based",
            "low-carb",
        ),
        "diet",
    ),
    **dict.fromkeys(("coeliac", "celiac", "gluten-free", "gluten intolerant"), "gluten intolerance"),
    **dict.fromkeys(("lactose intolerant", "lactose-intolerant", "dairy-free"), "lactose intolerance"),
    "diabetic": "diabetes",
    "teetotal": "alcohol",
    "sober": "alcohol",
}
_DIETS: Final = "|".join(sorted((re.escape(d) for d in DIET_SUBJECTS), key=len, reverse=True))
ROLE_HEAD: Final = re.compile(
    r"(?:er|or|ist|ian|ant|ent|ect|nurse|student|chef|dev|lead|cto|ceo|parent|mom|mum|dad)$", _I
)

# --- dates and time phrases -------------------------------------------------------------------

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
DATE: Final = (
    r"(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
    rf"|{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?"
    rf"|(?:(?:next|this|coming)\s+)?{_WEEKDAY}"
    r"|(?:next|this|coming)\s+(?:week(?:end)?|month|quarter|year|sprint)"
    r"|tomorrow(?:\s+(?:morning|afternoon|evening|night))?|tonight|today|eod|eow|noon|midnight"
    r"|(?:the\s+)?end\s+of\s+(?:the\s+)?(?:day|week|month|quarter|year|sprint)"
    r"|in\s+(?:\d+|a|an|two|three|four)\s+(?:days?|weeks?|months?))"
)
DEADLINE_HINT: Final = re.compile(
    r"\b(?:due|by|before|no\s+later\s+than|deadline\b\W*(?:(?:for|of)\s+[^,.;]+?\s+)?"
    rf"(?:is\s+|falls\s+on\s+|will\s+be\s+)?)\s*(?:on\s+)?(?P<when>{DATE})\b",
    _I,
)
# A word of commitment beside a date: what makes "... by April 15" a deadline rather than a report of
# progress ("I've completed 40% of it by March 15") or a worry ("... might not be ready by then").
COMMITMENT: Final = re.compile(
    r"\b(?:deadlines?|due|need(?:s|ed)?\s+to|ha(?:ve|s|d)\s+to|must|should|got\s+to|gotta"
    r"|supposed\s+to|plan(?:s|ned|ning)?\s+to|going\s+to|gonna|will|aim(?:s|ing)?\s+(?:to|for)"
    r"|goals?|target(?:s|ing)?|promised?\s+to|committed\s+to|expected\s+to|remind)\b|'ll\b",
    _I,
)
DEADLINE_SUBJECT: Final = (
    re.compile(
        r"\bdeadline\s+(?:for|of)\s+(?:the\s+|my\s+|our\s+)?(?P<what>[\w\s-]{1,40}?)\s+(?:is|:|falls|will)",
        _I,
    ),
    re.compile(r"^(?:the\s+|my\s+|our\s+)?(?P<what>[\w-]+(?:\s+[\w-]+){0,3}?)\s+(?:is|are)\s+due\b", _I),
    re.compile(r"\b(?:the\s+|my\s+|our\s+)(?P<what>[\w-]+(?:\s+[\w-]+){0,2}?)\s+deadline\b", _I),
)
DATE_ANY: Final = re.compile(rf"\b(?P<when>{DATE})\b", _I)
TEMPORARY_HINT: Final = re.compile(
    rf"\buntil\s+(?P<until>{DATE})\b|\b(?P<when>for\s+now|for\s+the\s+time\s+being|right\s+now|"
    r"at\s+the\s+moment|today|tonight|tomorrow|this\s+(?:morning|afternoon|evening|week(?:end)?|month)|"
    r"for\s+the\s+next\s+\w+\s+(?:hours?|days?|weeks?))\b|\btemporar(?:y|ily)\b",
    _I,
)

# --- message structure ------------------------------------------------------------------------

# An instruction that says when it applies: "Always give exact times when I ask about meetings", "if the
# build fails, page me", "each time I share code, ...". Such a rule holds for questions about its
# condition, so recall weighs it by its relevance like any memory (app.memory.packing).
CONDITION: Final = re.compile(r"\b(?:when(?:ever)?|if|each\s+time|every\s+time|any\s*time)\b", _I)
ABBREVIATIONS: Final = ("e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "ms.", "dr.", "approx.")
SENTENCE_SPLIT: Final = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+|;\s*")
# (pattern, fewest words the left part needs) -- each split starts a new clause
_FIRST_PERSON = r"(?:i|i'm|i've|i'd|we|we're|we've)\b"
# The words that start a relative clause after a comma ("..., which is 72% of my target", "..., who is a
# chef"), and where one continues a statement.
_RELATIVE = r"(?:which|who|where|when)\b"
RELATIVE_CLAUSE: Final = re.compile(rf",\s*(?={_RELATIVE})", _I)
# A question's inverted auxiliary and subject ("which dish should I ...", "where can we ...").
_AUX = r"(?:is|are|was|were|am|do|does|did|can|could|should|would|will|shall|may|might|must|have|has|had)"
_SUBJECT = r"(?:i|you|we|they|he|she|it|there)"
# (pattern, fewest words the left part needs, what the left part must start with)
CLAUSE_SPLITS: Final[tuple[tuple[re.Pattern[str], int, re.Pattern[str] | None], ...]] = (
    # "I live in Oslo and I never ..." (a new first-person subject starts a new clause)
    (re.compile(rf",?\s+(?:and|but|while|although)\s+(?={_FIRST_PERSON})", _I), 3, None),
    # "I switched jobs, I now work at ..." (only when the left part is first-person too)
    (re.compile(rf",\s+(?={_FIRST_PERSON})", _I), 3, re.compile(rf"^(?:{_FIRST_PERSON}|my\b|our\b)", _I)),
    # "I'm vegan, what should I cook?", "I need it faster, can I get help?"; "which", "who", "where" and
    # "when" only where the clause asks ("..., which dish should I cook", "..., where can I eat?"): after a
    # comma they more often add to what was said ("a release v1.0.0, which has been pushed with 150
    # commits"; "Sarah, who is a chef"), and a clause taken for a question is not kept.
    (
        re.compile(
            r"\s*(?:,|\s-)\s*(?=(?:so\s+)?(?:what|why|how|can\s+you|could\s+you|should\s+i|"
            r"should\s+we|can\s+i|could\s+i|may\s+i|can\s+we|could\s+we|do\s+you|would\s+you|will\s+you|"
            r"any\s+(?:ideas|suggestions))\b"
            rf"|(?:so\s+)?{_RELATIVE}(?:[^,?]*\?|(?:\s+\w+)?\s+{_AUX}\s+{_SUBJECT}\b))",
            _I,
        ),
        2,
        None,
    ),
    # "Remember I'm vegan and suggest a dish" / "..., remove it"
    (
        re.compile(
            r"(?:,\s*|\s+)(?:and\s+|so\s+)(?=(?:please\s+)?(?:suggest|recommend|tell\s+me|give\s+me|pick|"
            r"choose|propose|remind\s+me\s+(?!to\b)|help\s+me)\b)|,\s*(?=(?:remove|delete|forget|erase)\s+it\b)",
            _I,
        ),
        2,
        None,
    ),
)
# The user's own circumstances given as the reason of a question or request ("can you help me ...,
# considering I'm using Flask 2.3.1", "how can I keep going, especially since I've met 30 editors?"):
# a statement inside the question, kept as a fact when the question is not. `stated` runs to the end
# of the question or to the next request in it ("... SQLite 3.39 can you provide ...").
REASON_IN_QUESTION: Final = re.compile(
    rf",\s*(?:(?:especially|particularly|and)\s+)?(?:considering(?:\s+that)?|since|given\s+that)\s+"
    rf"(?P<stated>(?:{_FIRST_PERSON}|(?:my|our)\s+(?:[\w'-]+\s+){{0,3}}(?:is|are|was|were|has|have|had)\b).*?)"
    r"(?=\s+-\s+|\s+(?:and\s+)?(?:can|could|would|will)\s+you\b|,\s*(?:and\s+|so\s+)?(?:how|what|why|which)\b"
    r"|[,\s]*\?*\s*$)",
    _I,
)
INTERJECTIONS: Final = re.compile(
    r"^(?:(?:hi|hello|hey(?:\s+there)?|great|cool|thanks|thank\s+you|yes|yeah|yep|sure|alright|oh|"
    r"well|ah|nice|perfect)\s*[,!.:]+\s*|(?:ok|okay|so|um|uh|please|btw|by\s+the\s+way|also|and|"
    r"anyway|oh|ah|yes|yeah)\b[\s,!.:]*)+",
    _I,
)
CHITCHAT: Final = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|howdy|greetings|good\s+(?:morning|afternoon|evening|night|day)|"
    r"thanks|thank\s+you|thx|ty|cheers|ok|okay|k|kk|cool|great|nice|awesome|perfect|sure|yes|yeah|"
    r"yep|no|nope|alright|all\s+right|fine|got\s+it|sounds\s+good|makes\s+sense|bye|goodbye|"
    r"see\s+you(?:\s+later)?|later|lol|haha+|hmm+|wow|oh|ah|no\s+problem|np|you're\s+welcome|"
    r"how\s+are\s+you(?:\s+doing)?|how's\s+it\s+going|what's\s+up|nice\s+to\s+meet\s+you|"
    r"have\s+a\s+(?:good|nice|great)\s+\w+|never\s*mind|forget\s+(?:about\s+)?it|"
    r"(?:that's|that\s+is|this\s+is|it's|it\s+is|that\s+was)\s+(?:really\s+|very\s+|so\s+)?"
    r"(?:great|good|fine|cool|nice|awesome|perfect|helpful|amazing|interesting|funny|right|"
    r"correct|true|ok|okay|useful)|it\s+works|love\s+it|well\s+done|good\s+job|great\s+job)"
    r"(?:[\s,!]+(?:so\s+much|very\s+much|a\s+lot|again|there|everyone|all|buddy|mate|friend|too|"
    r"for\s+(?:the|your|all\s+the|that|this)?\s*\w*))*$",
    _I,
)

CHIT_WORDS: Final = frozenset(
    [
        "hi",
        "hello",
        "hey",
        "ok",
        "okay",
        "lol",
        "haha",
        "thanks",
        "thx",
        "ty",
        "cool",
        "great",
        "nice",
        "sure",
        "yes",
        "yeah",
        "yep",
        "no",
        "nope",
        "alright",
        "wow",
        "oh",
        "ah",
        "hmm",
        "bye",
        "k",
        "cheers",
        "awesome",
        "perfect",
        "fine",
        "good",
        "np",
    ]
)

# --- questions and requests -------------------------------------------------------------------

QUESTION_START: Final = re.compile(
    r"^(?!do(?:es)?\s+not\b|don't\b|may\s+\d)(?:what|what's|whats|which|who|who's|whom|whose|where|"
    r"where's|when|when's|why|how|how's|do|does|did|is|isn't|are|aren't|am|was|were|can|could|should|"
    r"shouldn't|would|will|have|has|may|shall|any\s+idea)\b",
    _I,
)
REQUEST_START: Final = re.compile(
    r"^(?:please\s+)?(?:suggest|recommend|propose|pick|choose|select|design|summari[sz]e|plan|help|"
    r"give|name|list|draft|write|tell|explain|describe|show|find|compare|translate|generate|outline|"
    r"brainstorm|rewrite|review|check|calculate|estimate|book|schedule|advise|teach|confirm|recap|"
    r"walk\s+me|remind\s+me(?!\s+to\b)|what\s+about|any\s+(?:ideas|suggestions|recommendations))\b",
    _I,
)
REMEMBER_REQUEST: Final = re.compile(
    r"^(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:remember|note|keep\s+in\s+mind|make\s+a\s+note)", _I
)
# sentence openers that never start a statement worth storing
NON_FACT_STARTS: Final = frozenset(
    [
        *("remove", "delete", "add", "update", "change", "set", "keep", "be", "give", "tell", "show"),
        "let",
        "try",
        "go",
        "stop",
        "start",
        "run",
        "open",
        "send",
        "call",
        "read",
        "look",
        "see",
        "wait",
        "imagine",
        "consider",
        "find",
        "make",
        "create",
        "fix",
        "debug",
        "answer",
        "say",
        "do",
        "does",
        "did",
        "can",
        "could",
        "would",
        "will",
        "should",
        "please",
        "thank",
        "thanks",
        "hi",
        "hello",
        "hey",
        "ok",
        "okay",
    ]
)

# --- explicit cues, labels and corrections ----------------------------------------------------

REMEMBER_PREFIX: Final = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:(?:i\s+want|i'd\s+like|i\s+would\s+like)\s+"
    r"you\s+to\s+)?(?:remember|memori[sz]e|(?:make\s+a\s+|take\s+)?note|keep\s+in\s+mind|bear\s+in\s+mind|"
    r"(?:don't|do\s+not)\s+forget(?!\s+to\b)|for\s+the\s+record|fyi|just\s+so\s+you\s+know|"
    r"for\s+your\s+information|know)\b(?:\s+(?:this|the\s+fact))?(?:\s+that\b)?(?!\s+to\b)\s*[:,-]?\s*",
    _I,
)
REMEMBER_TO: Final = re.compile(r"^(?:please\s+)?remember\s+to\s+", _I)
REMIND_TO: Final = re.compile(
    r"^(?:please\s+)?(?:remind\s+me|(?:don't|do\s+not)\s+(?:let\s+me\s+)?forget)\s+to\s+(?P<rest>.+)", _I
)
# label -> memory type it implies (None: the label only marks the statement explicit)
LABELS: Final[dict[str, str | None]] = {
    **dict.fromkeys(("temporary note", "temporary", "temp"), "temporary"),
    **dict.fromkeys(("hard constraint", "critical rule", "critical", "rule"), "critical_rule"),
    **dict.fromkeys(("reminder", "todo", "to-do", "task"), "task"),
    **dict.fromkeys(("mistake", "lesson learned", "lessons learned", "lesson"), "mistake"),
    **dict.fromkeys(("learning goal", "goal"), "learning_goal"),
    "constraint": "constraint",
    "decision": "decision",
    "deadline": "deadline",
    "preference": "preference",
    "project": "project",
    **dict.fromkeys(("important", "note", "fyi"), None),
}
KEEP_LABEL_TEXT: Final = frozenset(
    {"deadline", "reminder", "todo", "to-do", "task", "mistake", "lesson", "goal"}
)
_CORRECTION_LABELS = r"update(?:\s+again)?|correction|big\s+change|change\s+of\s+plans?"
CORRECTION_LABEL: Final = re.compile(rf"^(?:{_CORRECTION_LABELS})$", _I)
LABEL_PREFIX: Final = re.compile(
    r"^(?P<label>"
    + "|".join(sorted((re.escape(k) for k in LABELS), key=len, reverse=True))
    + rf"|{_CORRECTION_LABELS})\s*[:\-]\s*",
    _I,
)
CORRECTION_MARKER: Final = re.compile(
    r"^(?:(?:actually|in\s+fact|on\s+second\s+thought|scratch\s+that|(?:i(?:'ve|\s+have)?\s+)?"
    r"changed\s+my\s+mind(?:\s+about\s+[^,.;:-]+)?|let\s+me\s+correct\s+(?:that|myself)|i\s+misspoke|"
    r"i\s+was\s+wrong|that(?:'s|\s+is|\s+was)\s+(?:wrong|not\s+right|incorrect|outdated)(?:\s+actually)?|"
    r"not\s+any\s?more|hmm+|(?:oh\s+|no\s+)?wait(?:\s+no)?|one\s+more\s+(?:change|update|rename)|"
    r"now(?=\s+(?:i|we|my|our|it)\b))\b\s*[,:;.!-]*\s*"
    r"|(?:no|nope|sorry|my\s+bad|oops|update|correction)\s*[,:;.!-]+\s*)",
    _I,
)
CORRECTION_CUE: Final = re.compile(
    r"\b(?:actually|switch(?:ed|ing)?|chang(?:ed|ing)\s+(?:\w+\s+){0,3}?to|mov(?:ed|ing)\s+(?:away\s+)?"
    r"(?:from|to)|migrat\w*|instead|rather\s+than|no\s+longer|any\s?more|from\s+now\s+on|renamed|"
    r"replac\w*|quit|stopped|gave\s+up|dropped|used\s+to|my\s+bad|(?:cut|rais|lower|reduc|increas|bump)\w*"
    r"\s+(?:\w+\s+){0,4}?to|(?<!for\s)(?<!right\s)(?<!just\s)(?<!from\s)now(?!\s+on\b))\b",
    _I,
)
# (pattern, replacement): the stale value is named next to the new one; group ``prev`` is it
STALE_PATTERNS: Final = (
    (
        re.compile(
            r"\s*,?\s+(?:instead\s+of|rather\s+than)\s+(?P<prev>[^,.;!?]+?)"
            r"(?=\s+(?:for|as|on|in)\b|[,.;!?]|$)",
            _I,
        ),
        "",
    ),
    (re.compile(r"\s+(?:away\s+|over\s+)?from\s+(?P<prev>(?!\d)[^,.;!?]+?)\s+(?=to\s)", _I), " "),
    (
        re.compile(
            r"(?:(?<=\bnow)|(?=\s*,))\s*,?\s*(?:and\s+)?not\s+(?:the\s+|a\s+|an\s+)?"
            r"(?P<prev>[^,.;!?]{1,40}?)\s*(?:any\s?more)?\s*(?=[.!?]*$)",
            _I,
        ),
        "",
    ),
)
NOT_ANYMORE_LEAD: Final = re.compile(
    r"^.*?\bnot\s+(?P<prev>[^,.;]{1,40}?)\s+any\s?more\s*[,;:-]\s*(?P<rest>.+)$", _I
)
NOT_ANYMORE: Final = re.compile(r"\bnot\s+(?:a\s+|an\s+|the\s+)?(?P<prev>[^,.;]{1,40}?)\s+any\s?more\b", _I)
X_NOT_Y: Final = re.compile(r"^(?P<new>[\w.+#' -]{1,30}?),?\s+not\s+(?P<prev>[\w.+#' -]{1,30}?)[.!]*$", _I)
STOP_VERB: Final = re.compile(
    r"\b(?:quit|stopped|gave\s+up|dropped|ditched|no\s+longer\s+(?:use|eat|drink|play|like|own|have|do|"
    r"work\s+(?:at|for)|live\s+in))\s+(?:on\s+)?(?P<prev>[^,.;!?]+)",
    _I,
)
TRAILING_MODIFIERS: Final = re.compile(
    r"(?:\s+(?:last|this|next)\s+\w+|\s+(?:yesterday|today|entirely|completely|altogether|now|"
    r"anymore|any\s+more|for\s+good|recently|these\s+days|exclusively|too|as\s+well|every\s+\w+))+$",
    _I,
)
IT_IS: Final = re.compile(
    r"^(?:it|that)(?:'s|\s+is|\s+was)\s+(?:actually\s+|now\s+)?(?P<value>[^,;]{1,40}?)[.!]*$", _I
)
EMPHASIS: Final = re.compile(
    r"^(?:this|that|it)(?:'s|\s+is)\s+(?:really\s+|very\s+|super\s+|absolutely\s+)?"
    r"(?P<level>critical|crucial|important|non-negotiable|mandatory|a\s+hard\s+rule)[.!]*$",
    _I,
)
SCOPE: Final = re.compile(
    r"\b(?:for|as)\s+(?:(?:the|my|our|your|a|an|all\s+my|all\s+our)\s+)?(?!(?:now|good|ever|example|instance|"
    r"sure|free|fun|real|once|me|you|us|them|it|this|that|all|a\s+while)\b)(?P<scope>[\w\s.+-]{2,30}?)"
    r"(?=\s+(?:and|with|in|on|at|because|since|so|from|to|instead|now|too)\b|[,.;!?]|$)",
    _I,
)
PHRASE_END: Final = re.compile(
    r"\s+(?:with|without|about|except|including|like|for|on|in|at|over|than|to|from|when|because|since|"
    r"during|every|each|instead|rather|or|"
    r"but|as|by|while|if|unless|so|these|this|that|which|who|now)\b|[;:()!?.]|\s-\s",
    _I,
)

# --- forgetting -------------------------------------------------------------------------------

_FORGET_VERB = r"(?:forget|delete|erase|remove|wipe|clear|purge|discard|unlearn|scrap|get\s+rid\s+of)"
_POLITE = r"^(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:go\s+ahead\s+and\s+|just\s+)?"
FORGET_PATTERNS: Final = (
    re.compile(rf"{_POLITE}(?P<verb>{_FORGET_VERB})\s+(?!to\b)(?P<obj>.+)$", _I),
    re.compile(r"\bstop\s+remembering\s+(?P<obj>.+)$", _I),
    re.compile(rf"{_POLITE}(?:don't|do\s+not)\s+(?:keep|remember|store|save|retain)\s+(?P<obj>.+)$", _I),
    re.compile(
        r"\b(?:i'd|i\s+would)\s+(?:rather|prefer)\s+(?:that\s+)?you\s+(?:(?:not|didn't|did\s+not)\s+"
        r"(?:keep|remember|store)|forget|delete|remove|drop)\s+(?P<obj>.+)$",
        _I,
    ),
    re.compile(
        r"^(?:(?:there's\s+)?no\s+need\s+to|you\s+don't\s+need\s+to)\s+(?:remember|keep|store)\s+(?P<obj>.+)$"
        r"|^you\s+(?:can|may|should)\s+(?:forget|delete|remove)\s+(?P<obj2>.+)$",
        _I,
    ),
)
# a generic verb ("remove", "clear") only forgets when its object is about remembered things
MEMORY_OBJECT: Final = re.compile(
    r"^(?:my|our|that\b|what|everything|all\b|about|any)|\b(?:memory|memories|note|notes|fact|facts|"
    r"info|information|record|records|details|data)\b|\bfrom\s+(?:your\s+)?memory\b",
    _I,
)
FORGET_CLEANUP: Final = (
    re.compile(
        r"[\s,]*(?:from|in|out\s+of)\s+(?:your\s+)?(?:memory|memories|records?|notes?|the\s+store)\b.*$", _I
    ),
    re.compile(r"[\s,]*(?:any\s?more|please|for\s+me|for\s+good|now)[.!?\s]*$", _I),
    re.compile(
        r"^(?:\w+ly\s+)?(?:about\s+|(?:what|everything|anything)\s+(?:you\s+know|you\s+have|i\s+(?:told|said\s+to|gave)\s+"
        r"you|you\s+remember)\s+(?:about|on|regarding)\s+|everything\s+about\s+|(?:the|that|this|any|all)\s+"
        r"(?:memory|memories|note|notes|fact|facts|info|information|record|records|details)\s+"
        r"(?:about|on|of|regarding)\s+|that\s+(?=(?:i|we|my|our)\b)|(?:that|this)\s+)",
        _I,
    ),
)
PRONOUN_ONLY: Final = frozenset({"it", "that", "this", "them", "those", ""})
ABOUT_ME: Final = frozenset({"me", "myself", "us", "everything", "all", "all of it", "me so far"})


# --- the ordered fact rules -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str]
    type: str
    subject: str


def _r(pattern: str, type_: str, subject: str = "none") -> Rule:
    return Rule(re.compile(pattern, _I), type_, subject)


_WE = r"(?:i|we|i'm|we're|i\s+am|we\s+are)"
# A rule's verb: base form, not a participle or a chat idiom's filler ("Never been", "Always here").
_RULE_VERB = (
    r"(?!(?:been|had|was|were|did|went|got|made|knew|thought|felt|saw|seen|done|known|gone|took|came|said|"
    r"told|heard|here|there|up|good|happy|glad|ready|fun|nice|great|so|such|a|an|the|my|your|our|his|her|"
    r"their|this|that|it|i|you|we|too|just)\b)[a-z]+(?<![^e]ed)(?<!ing)\b"
)
# ... and something to do it to: a word past the particles ("Never give up" has none).
_PARTICLE = (
    r"(?:up|down|away|out|off|on|in|back|again|never|ever|it|that|this|anything|everything|too|so|now)"
)
_RULE_OBJECT = rf"\s+(?:{_PARTICLE}\s+)*(?!{_PARTICLE}\b)\w"
# Subjects of an epistemic "must" ("It must be nice", "You must be proud", "That must have been hard").
_PRONOUN = r"i|it|that|this|these|those|there|he|she|they|you|we|what|which|who|everything|something|anything"
# What a rule's subject must do: an act, or be in a state set for it ("be reviewed", "be in JSON");
# not "have been", "feel", "be so ...": guesses about how something was.
_MUST_ACT = (
    r"(?:be\s+(?:\w+ed|\w+en|kept|made|done|run|set|sent|shown|held|built|paid|put|read|in|under|below|"
    r"above|at|within|less|more|fewer|no|one|only|between|shorter|longer)\b|(?!(?:be|have|'ve|feel|seem|look|"
    r"sound|love|really|so|know)\b)[a-z]+\b)"
)
_ADV = r"(?:(?:\w+ly|really|still|also|now|much|do|just|even)\s+)?"
RULES: Final[tuple[Rule, ...]] = (
    # mistakes and lessons
    _r(
        r"\b(?:i|we)\s+made\s+(?:a|an|the)\s+(?:\w+\s+)?(?:mistake|error)\b|\blessons?\s+learned\b|"
        r"\bmy\s+mistake\s+was\b|\b(?:failed|broke|crashed|went\s+down)\s+because\b|\bwent\s+wrong\b|"
        r"\b(?:i|we)\s+(?:forgot|neglected)\s+to\b|\b(?:i|we)\s+should(?:n't|\s+not)?\s+have\s+\w+ed\b|"
        r"\b(?:caused|introduced)\s+(?:a|an|the)\s+(?:\w+\s+)?(?:bug|outage|incident|regression)\b",
        "mistake",
    ),
    # tasks (a deadline phrase turns them into deadlines later)
    _r(
        r"^i\s+(?:really\s+|still\s+|also\s+)?(?:(?:need|have|'ve\s+got|got|ought|plan|intend)\s+to|must|"
        r"should)\b|^we\s+(?:really\s+|still\s+|also\s+)?(?:need|have|'ve\s+got|got)\s+to\b|"
        r"^(?:i'm|i\s+am|we're|we\s+are)\s+(?:going|planning)\s+to\b|^(?:todo|to-do)\b|^i\s+(?:will|'ll)\s+\w+",
        "task",
    ),
    # learning goals
    _r(
        rf"^{_WE}\s+(?:currently\s+|now\s+|also\s+)?(?:learning|studying|practi[cs]ing|trying\s+to\s+"
        r"(?:learn|master|get\s+better\s+at))\b|^(?:i|we)\s+(?:want|would\s+like|'d\s+like|hope|plan|aim)\s+to\s+"
        r"(?:learn|study|master|get\s+better\s+at|improve)\b|\b(?:my|our)\s+(?:learning\s+)?goal\s+is\s+to\b",
        "learning_goal",
    ),
    # absolute rules: an imperative never/always with something to do ("Never push to main"), a
    # prohibition to the assistant ("you must not ..."), "<thing> must (not) <act>" and "is forbidden" /
    # "mandatory"; never a slot. Not rules: chat idioms with the same words ("Never been there", "You
    # never know", "Never give up", "That must have been tough", "You must try it", "a must").
    _r(
        rf"^(?:(?:you|we)\s+(?:must|should)\s+)?(?:never|always)\s+{_RULE_VERB}{_RULE_OBJECT}|"
        rf"^(?:don't|do\s+not)\s+ever\s+{_RULE_VERB}{_RULE_OBJECT}|^(?:don't|do\s+not)\b.*\bever\b|"
        r"^under\s+no\s+circumstances\b|^(?:you|we)\s+(?:must\s+not|mustn't|shall\s+not)\s+\w+|"
        rf"^(?!(?:{_PRONOUN})\b)(?!\w+ing\b)(?:[\w'-]+\s+){{0,5}}?(?!(?:{_PRONOUN}|a)\s)[\w'-]+\s+"
        rf"(?:must(?:\s+not|n't)?|shall\s+not)\s+{_MUST_ACT}|"
        r"\b(?:is|are)\s+(?:strictly\s+)?(?:forbidden|prohibited|not\s+allowed|mandatory|banned)\b",
        "critical_rule",
    ),
    # constraints on the user (diets, allergies, budgets, personal limits)
    _r(
        rf"^(?:i'm|i\s+am|i've\s+been|we're|we\s+are)\s+(?:\w+\s+)?(?P<diet>{_DIETS})\b|^(?:i|we)\s+(?:follow|"
        rf"eat|keep|'m\s+on|am\s+on)\s+(?:a\s+|an\s+)?(?:strict(?:ly)?\s+)?(?P<diet2>{_DIETS})\b",
        "constraint",
        "diet",
    ),
    _r(
        r"^(?:(?P<rel>my\s+[\w\s]{1,25}?|[A-Z][\w]+)\s+(?:is|are)|i'm|i\s+am|we're|we\s+are)\s+"
        r"(?:\w+\s+)?allergic\s+to\s+(?P<obj>[^,.;]+)|^(?:i|we)\s+have\s+(?:an?\s+)?(?:\w+\s+)?"
        r"(?P<obj2>[\w-]+)\s+allergy\b",
        "constraint",
        "allergy",
    ),
    _r(r"\b(?P<subj>(?:my|our)\s+(?:[\w-]+\s+){0,3}?budget)\b", "constraint", "slot"),
    _r(
        r"^(?:i|we)\s+(?:\w+ly\s+)?(?:never|don't\s+ever|won't|will\s+not|can't(?!\s+(?:stand|bear|wait))|"
        r"cannot|mustn't|avoid|(?:don't|do\s+not)\s+(?:eat|drink|use|work|take|do))\b|\brefuse[sd]?\s+to\b|"
        r"^(?:i'm|i\s+am|we're|we\s+are)\s+not\s+allowed\s+to\b|^(?:don't|do\s+not)\s+(?!forget)\w+",
        "constraint",
    ),
    # identity
    _r(
        r"\bmy\s+name\s+is\b|^(?:i'm|i\s+am)\s+called\b|^call\s+me\b|"
        r"^(?:i'm|i\s+am)\s+(?-i:[A-Z][a-z]+)(?:\s+(?-i:[A-Z][a-z]+))?[.!]*$",
        "identity",
        "fixed:name",
    ),
    _r(
        r"\b(?:i|we)\s+(?:now\s+|currently\s+|still\s+)?(?:live|reside)\s+in\b|"
        r"^(?:i'm|i\s+am|we're|we\s+are)\s+(?:now\s+|currently\s+)?(?:based|located|living)\s+in\b|"
        r"^(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+)?(?:moved|relocated)\s+(?:house\s+)?to\b",
        "identity",
        "fixed:home city",
    ),
    _r(
        r"(?:^|,\s*)(?:my|our)\s+(?P<rel>[\w\s]{1,25}?)\s+(?:now\s+)?(?:lives|resides|is\s+based|moved|"
        r"has\s+moved|is(?:\s+now)?(?:\s+living)?)\s+(?:in|to)\s+(?-i:[A-Z])",
        "fact",
        "relhome",
    ),
    _r(r"^(?:i'm|i\s+am)\s+(?:originally\s+)?from\b|^i\s+was\s+born\s+in\b", "identity", "fixed:hometown"),
    _r(r"^(?:i|we)\s+(?:now\s+|currently\s+)?work\s+(?:at|for)\b", "identity", "fixed:employer"),
    _r(r"^i\s+(?:now\s+)?work\s+as\b", "identity", "fixed:occupation"),
    _r(r"^(?:i'm|i\s+am)\s+\d{1,3}(?:\s+years?\s+old)?[.!]*$", "identity", "fixed:age"),
    # preferences
    _r(
        r"\b(?:my|our)\s+(?:favou?rite|preferred)\s+(?P<subj>[\w\s-]{1,30}?)\s+(?:is|are|was)\b",
        "preference",
        "slot",
    ),
    _r(
        rf"\b(?:i|we)\s+{_ADV}(?:prefer|favou?r)\s+(?P<obj>.+)|\b(?:i'd|we'd|i\s+would)\s+(?:much\s+)?"
        r"rather\s+(?P<obj2>.+)",
        "preference",
        "head",
    ),
    _r(
        rf"\b(?:i|we)\s+{_ADV}(?:hate|dislike|detest|loathe|can't\s+stand|cannot\s+stand|can't\s+bear|"
        rf"(?:don't|do\s+not)\s+{_ADV}(?:like|enjoy|love|care\s+for))\s+(?P<obj>.+)|\b(?:i'm|i\s+am)\s+not\s+"
        r"(?:a\s+(?:big\s+)?fan\s+of|into|keen\s+on)\s+(?P<obj2>.+)|^(?P<obj3>[\w\s-]{2,30}?)\s+"
        r"(?:bores?|annoys?)\s+me\b",
        "preference",
        "thing",
    ),
    _r(
        rf"\b(?:i|we)\s+{_ADV}(?:like|love|enjoy|adore)\s+(?P<obj>.+)|\b(?:i'm|i\s+am|we're|we\s+are)\s+"
        r"(?:\w+\s+)?(?:into|a\s+(?:big\s+|huge\s+)?fan\s+of|fond\s+of|keen\s+on|passionate\s+about)\s+"
        r"(?P<obj2>.+)",
        "preference",
        "thing",
    ),
    _r(
        r"^(?:i|we)\s+(?:usually|normally|typically|generally|mostly|tend\s+to|always)\s+(?P<obj>.+)",
        "preference",
        "category",
    ),
    _r(
        r"^(?:i'm|i\s+am)\s+(?:a|an)\s+(?!fan\b)(?P<obj>[\w\s-]{2,40}?)(?=\s+(?:at|for|in|with|who|and)\b|[,.!]*$)",
        "identity",
        "role",
    ),
    _r(
        r"^(?:i|i'm|i\s+am)\s+(?:\w+ly\s+|now\s+|still\s+)?(?:use|using|code\s+in|write\s+in|program\s+in)\b",
        "fact",
        "category",
    ),
    # decisions
    _r(
        r"\b(?:we|i|the\s+team)\s+(?:have\s+|'ve\s+)?decided\s+(?:to\s+|on\s+|that\s+)?(?P<obj>.+)|"
        r"^let(?:'s|\s+us)\s+(?:use|go\s+with|adopt|pick|choose|stick\s+with|switch\s+to|move\s+to|migrate|"
        r"deploy|host|build\s+with)\b|\bwe(?:'re|'ll|\s+are|\s+will|\s+shall)?\s+(?:be\s+)?(?:going\s+"
        r"(?:to\s+go\s+)?with|go(?:ing)?\s+with|switch(?:ing)?\s+to|mov(?:e|ing)\s+to|migrat(?:e|ing)|"
        r"standardi[sz]ing\s+on|settl(?:e|ing)\s+on|stick(?:ing)?\s+with|us(?:e|ing)|deploy(?:ing)?|"
        r"host(?:ing)?|chose|picked|selected|settled\s+on|adopted|went\s+with)\b|(?:^|,\s*)(?:use|switch\s+to|"
        r"move\s+to|migrate|go\s+with|stick\s+with|adopt|deploy|host|standardi[sz]e\s+on|build\s+(?:it\s+)?with|"
        r"keep\s+using)\b|^(?:the|our)\s+(?P<subj>(?:[\w-]+\s+){0,2}?[\w-]+)\s+(?:uses|is\s+built\s+(?:with|on)|runs\s+on|"
        r"is\s+(?:hosted|deployed)\s+on)\b",
        "decision",
        "category",
    ),
    # projects
    _r(r"^(?:this|the|our|my)\s+(?:current\s+)?project\s+is\b", "project", "fixed:project"),
    _r(rf"^{_WE}\s+(?:currently\s+)?(?:building|developing|working\s+on|creating)\b", "project"),
    # "my X is Y", "my X changed to Y", "I switched my X to Y", "renamed my X to Y"
    _r(
        r"(?:^|,\s*)(?:my|our)\s+(?P<subj>[\w\s'-]{1,40}?)\s+(?:is|are|was|has\s+been|'s|changed\s+to|"
        r"switched\s+to)\s+\S",
        "fact",
        "slot",
    ),
    _r(
        r"\b(?:renamed?|chang(?:e|ed)|switch(?:ed)?|swap(?:ped)?|set|updated?|moved?)\s+(?:over\s+)?(?:(?:my|our|the)\s+"
        r"(?P<subj>[\w\s'-]{1,40}?)\s+)?(?:from\s+.+?\s+)?to\s+\S",
        "fact",
        "switch",
    ),
    _r(r"^(?:i|we)\s+(?:now\s+|usually\s+|still\s+)?commute\b", "fact", "fixed:commute"),
    # first-person past events
    _r(
        r"^(?:i|we)\s+(?:just\s+|recently\s+|finally\s+|once\s+|also\s+)?(?:went|visited|met|saw|took|won|"
        r"attended|bought|sold|finished|completed|ran|watched|read|ate|got|spent|lost|found|flew|drove|gave|"
        r"had|did|celebrated|travell?ed|joined|left|graduated)\b|^(?:i|we)\s+\w+ed\b.*\b(?:yesterday|"
        r"last\s+(?:night|week|month|year|weekend)|ago|in\s+(?:19|20)\d\d)\b",
        "episodic",
    ),
)


# --- subject helpers (pure functions over the tables above) -------------------------------


def normalise_subject(raw: str) -> str:
    """The slot name of a subject phrase: "the UI theme preference" -> "theme"."""
    text = re.sub(r"[\u2018\u2019`]", "'", raw.lower())
    words = re.sub(r"[^\w\s'.+#-]", " ", text).replace("-", " ").replace("_", " ").split()
    while words and words[0] in LEADING_NOISE:
        words.pop(0)
    words = [re.sub(r"'s?$", "", w).strip(".") for w in words]
    words = [w for w in words if w]
    while len(words) > 1 and words[-1] in GENERIC_TAILS:
        words.pop()
    phrase = " ".join(words)
    if phrase in SUBJECT_SYNONYMS or not words:
        return SUBJECT_SYNONYMS.get(phrase, phrase)
    words[-1] = _singular(words[-1])
    phrase = " ".join(words)
    return SUBJECT_SYNONYMS.get(phrase, phrase)


def category_of(text: str | None) -> str | None:
    if not text:
        return None
    found = [(m.start(), subject) for pattern, subject in CATEGORY_PATTERNS if (m := pattern.search(text))]
    return min(found)[1] if found else None


def scope_of(text: str) -> str | None:
    m = SCOPE.search(text)
    return normalise_subject(m["scope"]) or None if m else None


def _noun_words(obj: str | None) -> list[str]:
    """The noun phrase at the start of an object, as words: "short, practical answers with ..."."""
    if not obj:
        return []
    phrase = PHRASE_END.split(obj, maxsplit=1)[0]
    phrase = TRAILING_MODIFIERS.sub("", phrase)
    return [w for w in re.sub(r"[^\w\s'+#.-]", " ", phrase).split() if w.lower() not in LEADING_NOISE]


def noun_head(obj: str | None) -> str | None:
    words = _noun_words(obj)
    return normalise_subject(words[-1]) or None if words else None


def noun_phrase(obj: str | None) -> str | None:
    words = _noun_words(obj)
    return normalise_subject(" ".join(words[-4:])) or None if words else None


def _singular(word: str) -> str:
    if len(word) <= 3 or word in INVARIANT_PLURALS or word.endswith(("ss", "us", "is", "os")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return f"{word[:-3]}y"
    if word.endswith(("ches", "shes", "xes", "zes", "sses")) or (word.endswith("oes") and len(word) > 5):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def clean_value(value: str | None) -> str | None:
    if not value:
        return None
    value = re.split(r"\s-\s|\s+(?:but|and\s+now|so)\s+", value)[0]
    value = TRAILING_MODIFIERS.sub("", value.strip())
    value = re.sub(r"^(?:the|a|an|my|our)\s+", "", value.strip(" .,!?'\""), flags=re.IGNORECASE)
    return value[:60] or None


def group(m: re.Match[str], *names: str) -> str | None:
    for name in names:
        if name in m.re.groupindex and m[name]:
            return str(m[name])
    return None


def group_of(m: re.Match[str] | None, name: str) -> str | None:
    return group(m, name) if m else None


def is_chitchat(clause: str) -> bool:
    words = re.findall(r"[\w']+", clause.lower())
    return not words or all(w in CHIT_WORDS for w in words) or bool(CHITCHAT.match(clause.rstrip(" .!?")))


def deadline_subject(text: str) -> str | None:
    for pattern in DEADLINE_SUBJECT:
        if m := pattern.search(text):
            what = normalise_subject(m["what"])
            return f"{what.removesuffix(' deadline')} deadline" if what else None
    return None


def clean_text(message: str) -> str:
    text = re.sub(r"[\u2018\u2019`]", "'", message).replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"\s*[\u2013\u2014]\s*", " - ", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def is_declarative(text: str) -> bool:
    words = text.split()
    if len(words) < 3:  # "One answer.", "Money's tight": fragments, not facts
        return False
    return words[0].lower().strip(",.!") not in NON_FACT_STARTS and not REQUEST_START.match(text)


def states_condition(text: str) -> bool:
    """Whether an instruction says when it applies (`CONDITION`): "... when I ask about deadlines"."""
    return CONDITION.search(text) is not None
