"""A seeded generator of multi-session personas (the synthetic dataset).

Each persona is one user talking to an assistant over several sessions, days apart:
- attributes stated once and then changed in later sessions (preference changes), or corrected right
  away in passing ("Actually, it's Vienna, not Oslo."): the question asks for the current value, the
  turns with earlier values are stale evidence;
- stable facts, asked later;
- distractors: other people's versions of the same attributes ("My brother lives in Madrid."),
  chit-chat, questions to the assistant, and the assistant's replies;
- temporary facts ("I'm working from the library today."): asked about weeks later, when they have
  lapsed, so they are stale evidence of a question with nothing current to recall;
- project-scoped facts in two projects' sessions: asked within one project, the other project's value
  is out of scope (counted as stale);
- questions about things never mentioned (group "abstention": the right context is an empty one).

Statements use the phrasings the offline extractor documents (README, "The offline model"); a
unit test pins which slot each template lands in.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.quality.model import TURN_STEP, Conversation, Dataset, Question, Turn


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    values: tuple[str, ...]
    state: str  # first statement
    change: tuple[str, ...]  # a later change, in another session
    correct: str  # a correction in passing, right after a wrong first statement ({new}, {old})
    question: str
    distractor: str | None = None  # someone else's value of the same attribute


FAMILIES: tuple[Family, ...] = (
    Family(
        "home city",
        ("Porto", "Lisbon", "Berlin", "Vienna", "Oslo", "Dublin", "Prague", "Madrid", "Zurich", "Helsinki"),
        "I live in {v}.",
        ("I moved to {v} last month.", "I live in {v} now."),
        "Actually, it's {new}, not {old}.",
        "Which city do I live in?",
        "My brother lives in {v}.",
    ),
    Family(
        "employer",
        ("Google", "Stripe", "Shopify", "Atlassian", "Spotify", "Siemens", "Airbus", "Philips"),
        "I work at {v}.",
        ("I now work at {v}.",),
        "Actually, it's {new}, not {old}.",
        "Which company do I work for?",
        "My friend Nora works at {v}.",
    ),
    Family(
        "editor",
        ("vim", "emacs", "VS Code", "Sublime Text", "Helix", "Zed"),
        "My favourite editor is {v}.",
        ("I switched my editor to {v}.",),
        "Actually, it's {new}, not {old}.",
        "What code editor do I use?",
        "My colleague Anna uses {v}.",
    ),
    Family(
        "theme",
        ("dark", "light"),
        "I prefer {v} mode.",
        ("Actually, I prefer {v} mode now.",),
        "Actually, I prefer {new} mode now.",
        "Do I prefer light mode or dark mode?",
    ),
    Family(
        "drink",
        ("coffee", "green tea", "matcha", "espresso", "orange juice", "sparkling water"),
        "My favourite drink is {v}.",
        ("My favourite drink is {v} now.",),
        "Actually, it's {new}, not {old}.",
        "What is my favourite drink?",
        "My sister's favourite drink is {v}.",
    ),
    Family(
        "diet",
        ("vegetarian", "vegan", "pescatarian"),
        "I'm {v}.",
        ("I'm {v} now.",),
        "Actually, it's {new}, not {old}.",
        "What diet do I follow?",
    ),
    Family(
        "programming language",
        ("Python", "Rust", "Go", "TypeScript", "Kotlin", "Haskell"),
        "My favourite programming language is {v}.",
        ("My favourite programming language is {v} now.",),
        "Actually, it's {new}, not {old}.",
        "Which programming language do I like best?",
    ),
    Family(
        "color",
        ("blue", "green", "red", "purple", "orange", "yellow"),
        "My favorite color is {v}.",
        ("My favorite color is {v} now.",),
        "Actually, it's {new}, not {old}.",
        "What is my favorite color?",
    ),
    Family(
        "car",
        ("Honda Civic", "Toyota Corolla", "Mazda 3", "Tesla Model 3", "VW Golf"),
        "My car is a {v}.",
        ("My car is a {v} now.",),
        "Actually, it's a {new}, not a {old}.",
        "What car do I drive?",
    ),
    Family(
        "timezone",
        ("UTC", "CET", "PST", "EST", "JST"),
        "My timezone is {v}.",
        ("My timezone is {v} now.",),
        "Actually, it's {new}, not {old}.",
        "Which timezone am I in?",
    ),
)

DOGS = ("Biscuit", "Rex", "Luna", "Pepper", "Milo")
TEMPORARY = (
    (
        "Temporary: I'm working from {v} today.",
        ("the library", "home", "a cafe downtown"),
        "Where am I working from today?",
    ),
    (
        "I'm in {v} this week for a conference.",
        ("Kyoto", "Austin", "Lyon", "Krakow"),
        "Which city am I visiting this week?",
    ),
)
PROJECTS = ("atlas", "borealis")
PROJECT_FACTS = (
    (
        "In this project we use {v}.",
        ("PostgreSQL", "MySQL", "SQLite", "MongoDB"),
        "Which database does this project use?",
    ),
    ("We deploy this project on {v}.", ("AWS", "Azure", "DigitalOcean"), "Where do we deploy this project?"),
)
CHITCHAT = (
    "I watched a documentary about octopuses last night.",
    "The weather was lovely yesterday.",
    "Thanks, that helps!",
    "Can you recommend a good podcast?",
    "I had a long day at work.",
    "What's a quick recipe for dinner?",
    "Haha, that's funny.",
    "I'm reading a novel about a lighthouse keeper.",
)
REPLIES = (
    "Noted.",
    "Got it, thanks for letting me know.",
    "That sounds great!",
    "Happy to help. Anything else on your mind?",
    "Here are a few ideas: keep it simple, start small, and iterate as you go.",
    "Interesting! Tell me more whenever you like.",
)
UNKNOWN = (
    "What is my cat's name?",
    "What is my blood type?",
    "Which gym am I a member of?",
    "What is my partner's name?",
    "Which instrument do I play?",
    "What is my favourite football team?",
)
NAMES = ("Ada", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kira", "Lior")


class _Persona:
    def __init__(self, rng: random.Random, index: int, start: datetime) -> None:
        self.rng = rng
        self.index = index
        self.user = f"persona-{index}"
        self.n_sessions = rng.randint(5, 7)
        self.sessions: list[list[tuple[str, str, str | None]]] = [[] for _ in range(self.n_sessions)]
        self.projects: list[str | None] = [None] * self.n_sessions
        self.start = start

    def say(self, session: int, text: str, tag: str | None = None) -> None:
        self.sessions[session].append(("user", text, tag))
        self.sessions[session].append(("assistant", self.rng.choice(REPLIES), None))


def _generate_persona(rng: random.Random, index: int, start: datetime) -> tuple[Conversation, list[Question]]:
    p = _Persona(rng, index, start)
    last = p.n_sessions - 1
    # Two sessions (never the first) belong to projects; everything else is global.
    project_sessions = rng.sample(range(1, p.n_sessions), 2)
    for project, session in zip(PROJECTS, project_sessions, strict=True):
        p.projects[session] = project
    global_sessions = [s for s in range(p.n_sessions) if p.projects[s] is None]
    plans: list[tuple[str, Family | None, list[str], list[str]]] = []  # (question, family, tags, values)

    for family in rng.sample(FAMILIES, 6):
        values = rng.sample(family.values, min(len(family.values), 3))
        changes = rng.choice((0, 1, 1, 2)) if len(values) > 2 else rng.choice((0, 1))
        corrected = rng.random() < 0.35
        first = rng.choice(global_sessions[:2])
        later = [s for s in global_sessions if s > first]
        changes = min(changes, len(later))
        tags = []
        tag = f"{family.name}#0"
        p.say(first, family.state.format(v=values[0]), tag)
        tags.append(tag)
        said = [values[0]]
        if corrected:
            new = _next_value(family.values, said)
            tag = f"{family.name}#c"
            p.say(first, family.correct.format(new=new, old=said[-1]), tag)
            tags.append(tag)
            said.append(new)
        for n, session in enumerate(sorted(rng.sample(later, changes))):
            new = _next_value([*values[1:], *family.values], said)
            tag = f"{family.name}#{n + 1}"
            p.say(session, rng.choice(family.change).format(v=new), tag)
            tags.append(tag)
            said.append(new)
        plans.append((family.question, family, tags, said))
        if family.distractor and rng.random() < 0.7:
            other = rng.choice([v for v in family.values if v not in said] or list(family.values))
            p.say(rng.choice(global_sessions), family.distractor.format(v=other))

    dog = rng.choice(DOGS)
    p.say(rng.choice(global_sessions), f"My dog's name is {dog}.", "dog")
    plans.append(("What is my dog called?", None, ["dog"], [dog]))

    temporary = rng.choice(TEMPORARY)
    where = rng.choice(temporary[1])
    before_last = [s for s in global_sessions if s < last] or global_sessions[:1]
    p.say(rng.choice(before_last), temporary[0].format(v=where), "temp")

    project_values: dict[str, list[str]] = {}
    for template, values, _ in PROJECT_FACTS:
        picked = rng.sample(values, 2)
        for project, session, value in zip(PROJECTS, project_sessions, picked, strict=True):
            p.say(session, template.format(v=value), f"{project}:{template}")
        project_values[template] = picked

    for session in range(p.n_sessions):
        for _ in range(rng.randint(1, 3)):
            p.say(session, rng.choice(CHITCHAT))
        rng.shuffle(p.sessions[session])  # order within a session: pairs stay adjacent below
        p.sessions[session] = _pairs_first(p.sessions[session])

    # Ids and times.
    turns: list[Turn] = []
    ids: dict[str, str] = {}
    when = start
    for s_index, session in enumerate(p.sessions):
        session_id = f"s{s_index}"
        for t_index, (role, text, tag) in enumerate(session):
            turn_id = f"{s_index}:{t_index}"
            if tag is not None:
                ids[tag] = turn_id
            turns.append(
                Turn(turn_id, role, text, when + t_index * TURN_STEP, session_id, project=p.projects[s_index])
            )
        when += timedelta(days=rng.randint(4, 12), hours=rng.randint(-3, 3))

    conv_id = f"synthetic-{index}"
    questions: list[Question] = []

    def add(question: str, category: str, **kw: Any) -> None:
        qid = f"{conv_id}/q{len(questions)}"
        questions.append(
            Question(id=qid, conversation_id=conv_id, question=question, category=category, **kw)
        )

    for question, family, tags, said in plans:
        if family is None:
            add(question, "stable", evidence=(ids[tags[0]],), expected=(said[0],))
            continue
        corrected = any(t.endswith("#c") for t in tags)
        category = "correction" if corrected else "change" if len(tags) > 1 else "stable"
        add(
            question,
            category,
            evidence=(ids[tags[-1]],),
            stale_evidence=tuple(ids[t] for t in tags[:-1]),
            expected=(said[-1],),
            stale=tuple(said[:-1]),
            kind="update" if len(tags) > 1 else None,
        )
    add(temporary[2], "temporary", stale_evidence=(ids["temp"],), stale=(where,))
    for (template, _values, question), project_index in zip(PROJECT_FACTS, (0, 1), strict=True):
        project = PROJECTS[project_index]
        other = PROJECTS[1 - project_index]
        values = project_values[template]
        add(
            question,
            "project",
            evidence=(ids[f"{project}:{template}"],),
            stale_evidence=(ids[f"{other}:{template}"],),
            expected=(values[project_index],),
            stale=(values[1 - project_index],),
            project=project,
        )
    for question in rng.sample(UNKNOWN, 2):
        add(question, "nothing known", group="abstention")
    return Conversation(conv_id, p.user, turns), questions


def _next_value(candidates: Sequence[str], said: Sequence[str]) -> str:
    """A value not said yet, else one that differs from the current value."""
    return next((v for v in candidates if v not in said), None) or next(
        v for v in candidates if v != said[-1]
    )


def _pairs_first(session: list[tuple[str, str, str | None]]) -> list[tuple[str, str, str | None]]:
    """Rebuild user/assistant pairs after a shuffle, keeping a correction right after what it corrects."""
    users = [t for t in session if t[0] == "user"]
    replies = [t for t in session if t[0] == "assistant"]
    # A correction ("#c") must follow the statement it corrects within the session.
    order = sorted(range(len(users)), key=lambda i: _rank(users, i))
    out: list[tuple[str, str, str | None]] = []
    for position, i in enumerate(order):
        out.append(users[i])
        out.append(replies[position])
    return out


def _rank(users: list[tuple[str, str, str | None]], i: int) -> tuple[int, int]:
    tag = users[i][2] or ""
    if tag.endswith("#c"):
        base = tag[:-2] + "#0"
        anchor = next(j for j, u in enumerate(users) if u[2] == base)
        return (anchor, 1)
    return (i, 0)


def generate(seed: int = 7, personas: int = 12) -> Dataset:
    rng = random.Random(seed)
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for index in range(personas):
        start = datetime(2025, 1, 6, 9, 0, tzinfo=UTC) + timedelta(days=rng.randint(0, 60))
        conv, qs = _generate_persona(rng, index, start)
        conversations.append(conv)
        questions.extend(qs)
    notes = [f"seed {seed}, {personas} personas"]
    return Dataset(f"synthetic-s{seed}", "synthetic", conversations, questions, notes)
