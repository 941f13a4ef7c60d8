"""The rule-based analyser: text in, intents out (no model, no database)."""

from __future__ import annotations

import pytest

from app.language.analysis import (
    MEMORY_TYPES,
    Analysis,
    FactIntent,
    analyse,
    extract_facts,
    normalise_subject,
)
from app.language.rules import states_condition


def only_fact(message: str) -> FactIntent:
    analysis = analyse(message)
    assert len(analysis.facts) == 1, analysis
    return analysis.facts[0]


# --- the product's acceptance sentences (verbatim) --------------------------------------------


def test_prefer_dark_mode() -> None:
    fact = only_fact("I prefer dark mode")
    assert (fact.type, fact.subject, fact.is_correction) == ("preference", "theme", False)
    assert "dark mode" in fact.content


def test_theme_question_is_a_question_without_facts() -> None:
    analysis = analyse("What theme do I like?")
    assert analysis.question == "What theme do I like?"
    assert analysis.facts == ()
    assert analysis.forgets == ()


def test_switch_to_light_mode_is_a_theme_correction() -> None:
    fact = only_fact("Actually I switched to light mode")
    assert (fact.type, fact.subject, fact.is_correction) == ("preference", "theme", True)
    assert "light mode" in fact.content
    assert "Actually" not in fact.content


def test_forget_theme_preference() -> None:
    analysis = analyse("Forget my theme preference")
    assert analysis.facts == ()
    assert analysis.question is None
    assert [f.subject for f in analysis.forgets] == ["theme"]


def test_migrate_api_from_flask_to_fastapi() -> None:
    fact = only_fact("Migrate the API from Flask to FastAPI")
    assert (fact.type, fact.is_correction, fact.previous_value) == ("decision", True, "Flask")
    assert fact.subject == "backend framework"
    assert "FastAPI" in fact.content
    assert "Flask" not in fact.content  # the stale value lives in previous_value only


def test_use_react_and_vite_for_the_frontend() -> None:
    fact = only_fact("Use React and Vite for the frontend")
    assert (fact.type, fact.subject, fact.is_correction) == ("decision", "frontend framework", False)


def test_switching_to_nextjs_for_the_frontend() -> None:
    fact = only_fact("We are switching to Next.js for the frontend")
    assert (fact.type, fact.subject, fact.is_correction) == ("decision", "frontend framework", True)
    assert "Next.js" in fact.content


def test_i_am_vegan_is_a_constraint() -> None:
    fact = only_fact("I am vegan")
    assert (fact.type, fact.subject) == ("constraint", "diet")


def test_dinner_budget_slot() -> None:
    fact = only_fact("My dinner budget is 30 dollars")
    assert fact.subject == "dinner budget"
    assert fact.type in {"constraint", "fact"}
    assert "30 dollars" in fact.content


# --- rule families (own sentences) ------------------------------------------------------------

# (message, type, subject); subject ... means "any"
FAMILY_CASES: list[tuple[str, str, object]] = [
    # preferences
    ("I like working with Vim keybindings", "preference", "editor"),
    ("I love jazz", "preference", "jazz"),
    ("I really hate pineapple on pizza", "preference", "pineapple"),
    ("I can't stand country music", "preference", "country music"),
    ("I'm a big fan of spicy ramen", "preference", "spicy ramen"),
    ("My favourite colour is teal", "preference", "color"),
    ("I prefer tabs over spaces", "preference", "indentation"),
    ("I usually code in Emacs", "preference", "editor"),
    ("I prefer concise replies without emojis", "preference", "response style"),
    ("I'd rather have a light theme", "preference", "theme"),
    # identity
    ("My name is Dana Whitfield", "identity", "name"),
    ("I live in Lisbon", "identity", "home city"),
    ("I work at Globex Corporation", "identity", "employer"),
    ("I am a data engineer", "identity", "occupation"),
    ("I'm originally from Galway", "identity", "hometown"),
    # decisions
    ("We decided to use SQLite for the prototype", "decision", "database"),
    ("Let's go with pnpm", "decision", "package manager"),
    ("We're going with Svelte", "decision", "frontend framework"),
    ("Host the API on Heroku", "decision", "cloud provider"),
    ("Let's use Tailwind for styling", "decision", "styling"),
    # constraints and critical rules
    ("I'm allergic to peanuts", "constraint", "peanut allergy"),
    ("My son is allergic to eggs", "constraint", "son egg allergy"),
    ("I'm lactose intolerant", "constraint", "lactose intolerance"),
    ("I follow a paleo diet", "constraint", "diet"),
    ("I never work on Sundays", "constraint", None),
    ("Don't schedule anything before 9am", "constraint", None),
    ("Never push directly to the main branch", "critical_rule", None),
    ("Always run the linter before committing", "critical_rule", None),
    ("Database migrations must be reviewed by two people", "critical_rule", None),
    ("Do not use Oracle for this project, ever", "critical_rule", None),
    # deadlines
    ("The quarterly report is due Friday", "deadline", "quarterly report deadline"),
    ("The deadline for the grant application is 2026-12-05", "deadline", "grant application deadline"),
    ("I need to send the invoices by next Monday", "deadline", ...),
    # temporary
    ("Today I'm working from the library", "temporary", None),
    ("For now, the build server is offline", "temporary", None),
    ("I'm in Madrid this week", "temporary", None),
    # tasks, learning goals, mistakes, projects, episodes
    ("I need to renew my passport", "task", None),
    ("Remind me to water the plants", "task", None),
    ("I'm learning Japanese", "learning_goal", None),
    ("I want to get better at public speaking", "learning_goal", None),
    ("I made a mistake: I ran the migration against production", "mistake", None),
    ("Lesson learned: always back up before upgrading", "mistake", None),
    ("The release failed because the cache was never warmed", "mistake", None),
    ("This project is a recipe planner for busy parents", "project", "project"),
    ("I went to a pottery workshop last weekend", "episodic", None),
    # slots from "my X is Y"
    ("My team's on-call rotation is weekly", "fact", "team on call rotation"),
    ("My car is a green hatchback", "fact", "car"),
    ("I commute on an e-scooter", "fact", "commute"),
]


@pytest.mark.parametrize(("message", "type_", "subject"), FAMILY_CASES)
def test_rule_families(message: str, type_: str, subject: object) -> None:
    fact = only_fact(message)
    assert fact.type == type_
    if subject is not ...:
        assert fact.subject == subject
    assert fact.type in MEMORY_TYPES
    assert 0.0 <= fact.importance <= 1.0
    assert 0.0 <= fact.confidence <= 1.0


# (message, is_correction, previous_value, substring that must not stay in content)
CORRECTION_CASES: list[tuple[str, str | None, str | None]] = [
    ("Actually, it's Helix", None, None),
    ("No, Postgres not MySQL", "MySQL", "MySQL"),
    ("I changed my mind, I'd rather use Vue", None, None),
    ("Not Django anymore, we use Litestar", "Django", "Django"),
    ("I no longer drink coffee", "coffee", None),
    ("My daughter plays the cello now, not the violin", "violin", "violin"),
    ("Use Bun instead of npm", "npm", "npm"),
    ("I moved from Leeds to Bristol", "Leeds", "Leeds"),
    ("Scratch that, the standup is at 10 now", None, None),
    ("I gave up sugar completely", "sugar", None),
]


@pytest.mark.parametrize(("message", "previous", "gone"), CORRECTION_CASES)
def test_corrections(message: str, previous: str | None, gone: str | None) -> None:
    fact = only_fact(message)
    assert fact.is_correction
    assert fact.previous_value == previous
    if gone is not None:
        assert gone not in fact.content


def test_correction_names_the_slot_from_the_value() -> None:
    fact = only_fact("Actually, it's Helix")
    assert fact.subject == "editor"
    assert "Helix" in fact.content


def test_it_resolves_to_the_previous_slot_in_a_conversation() -> None:
    facts = extract_facts([("user", "My shell is bash."), ("user", "Actually it's fish now.")])
    assert [f.subject for f in facts] == ["shell", "shell"]
    assert facts[1].is_correction


def test_moving_city_keeps_the_home_city_slot() -> None:
    fact = only_fact("I've relocated - I live in Bristol now, not Leeds")
    assert (fact.type, fact.subject, fact.previous_value) == ("identity", "home city", "Leeds")
    assert "Leeds" not in fact.content


def test_budget_change_is_a_correction_of_the_same_slot() -> None:
    first = only_fact("My holiday budget is 2000 euros")
    second = only_fact("Cut my holiday budget to 1500 euros")
    assert first.subject == second.subject == "holiday budget"
    assert second.is_correction
    assert not first.is_correction


def test_slot_types_are_canonical_whatever_the_phrasing() -> None:
    seed = only_fact("My editor is Sublime Text")
    update = only_fact("I switched my editor to Zed")
    assert (seed.subject, seed.type) == (update.subject, update.type) == ("editor", "preference")


def test_marker_only_sentence_flags_the_next_statement() -> None:
    fact = only_fact("I changed my mind. Deploy on GCP.")
    assert fact.is_correction
    assert fact.subject == "cloud provider"


# --- explicit cues, labels and confidence -----------------------------------------------------


@pytest.mark.parametrize(
    ("message", "type_"),
    [
        ("Remember that I'm coeliac", "constraint"),
        ("Please remember my locker code is 4412", "fact"),
        ("Note that the office closes at 6pm", "fact"),
        ("Keep in mind I never eat before noon", "constraint"),
        ("Remember: never share the staging password", "critical_rule"),
        ("Can you remember that I prefer aisle seats?", "preference"),
    ],
)
def test_explicit_remember_is_confident_and_cue_free(message: str, type_: str) -> None:
    fact = only_fact(message)
    assert fact.type == type_
    assert fact.confidence == pytest.approx(0.9)
    lowered = fact.content.lower()
    for cue in ("remember", "note that", "keep in mind"):
        assert cue not in lowered


def test_inferred_statement_has_lower_confidence() -> None:
    assert only_fact("I like hiking").confidence == pytest.approx(0.7)


def test_labels_set_the_type() -> None:
    assert only_fact("Temporary note: the elevator is broken today").type == "temporary"
    rule = only_fact("Hard constraint: no deploys on Fridays")
    assert rule.type == "critical_rule"
    assert rule.content == "No deploys on Fridays."
    assert only_fact("Constraint: never store raw card numbers").type == "critical_rule"


def test_importance_defaults_by_type() -> None:
    assert only_fact("Never reuse production credentials in tests").importance == pytest.approx(0.95)
    assert only_fact("I like hiking").importance == pytest.approx(0.6)
    assert only_fact("I'm in Madrid this week").importance == pytest.approx(0.3)


def test_emphasis_sentence_upgrades_the_previous_rule() -> None:
    fact = only_fact("Don't log request bodies. This is critical.")
    assert fact.type == "critical_rule"
    assert fact.importance >= 0.95


# --- time hints -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "type_", "hint"),
    [
        ("The design review is due Thursday", "deadline", "Thursday"),
        ("Our tax filing deadline is April 15", "deadline", "April 15"),
        ("I have to submit the thesis by 2027-01-31", "deadline", "2027-01-31"),
        # a plain fact's date makes a deadline only beside a word of commitment: a deadline expires
        # after its date, and a report of progress or a worry keeps what it says
        ("I have a deadline of April 1 for the first sprint", "deadline", "April 1"),
        ("I've set a goal to finish the screenplay by April 15", "deadline", "April 15"),
        ("We will ship the beta by June 3", "deadline", "June 3"),
        ("I've only completed 40% of the course by March 15, 2024", "fact", None),
        ("My savings plan might not be enough by June 30", "fact", None),
        ("I finished the first draft by April 2", "episodic", None),
        # the word and the date in the same part of a sentence a relative clause continues
        ("I've logged 3,600 words by March 3, which is 72% of my weekly target", "fact", None),
        ("I started the screenplay draft, which is due April 15", "deadline", "April 15"),
        ("I have to submit the grant by May 5, which my advisor set", "deadline", "May 5"),
        ("Today I'm working from home", "temporary", "Today"),
        ("The VPN is down for now", "temporary", "for now"),
        ("The gym is closed until Monday", "temporary", "Monday"),
    ],
)
def test_time_hints(message: str, type_: str, hint: str | None) -> None:
    fact = only_fact(message)
    assert (fact.type, fact.expires_hint) == (type_, hint)
    assert fact.type != "temporary" or fact.subject is None  # a temporary never takes over a slot


# --- forgetting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "subject"),
    [
        ("Forget my theme preference", "theme"),
        ("forget that I like olives", "olive"),
        ("Please delete what you know about my gym schedule", "gym schedule"),
        ("erase my address", "address"),
        ("stop remembering my shoe size", "shoe size"),
        ("Remove the note about the dentist appointment", "dentist appointment"),
        ("Could you wipe my trivia hobby info?", "trivia"),
        ("don't keep my blood type in memory anymore", "blood type"),
        ("I'd rather you didn't remember my salary", "salary"),
    ],
)
def test_forget_requests(message: str, subject: str) -> None:
    analysis = analyse(message)
    assert analysis.facts == ()
    assert analysis.question is None
    assert [f.subject for f in analysis.forgets] == [subject]
    assert analysis.forgets[0].description


def test_forget_keeps_a_readable_description() -> None:
    assert analyse("erase my address").forgets[0].description == "my address"


def test_forget_that_clause_uses_the_clause_slot() -> None:
    assert analyse("Forget that I prefer dark mode").forgets[0].subject == "theme"


@pytest.mark.parametrize("message", ["Delete the old feature branch", "I forgot my umbrella at work"])
def test_not_forget_requests(message: str) -> None:
    assert analyse(message).forgets == ()


# --- questions, requests and chit-chat --------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "which frontend framework do we use?",
        "What should I cook tonight?",
        "Do you remember where I parked?",
        "Remind me what my wifi password hint is",
        "Is the build cluster back up",
        "Recommend a book for my flight",
        "Suggest a restaurant for Saturday - somewhere quiet.",
        "Am I allergic to anything?",
        "Do I still play the trumpet?",
    ],
)
def test_questions_yield_no_facts(message: str) -> None:
    analysis = analyse(message)
    assert analysis.question
    assert analysis.facts == ()
    assert analysis.forgets == ()
    assert not analysis.is_greeting_or_chitchat


def test_statement_plus_question_yields_both() -> None:
    analysis = analyse("I'm pescatarian, what should I order?")
    assert [f.subject for f in analysis.facts] == ["diet"]
    assert analysis.question == "what should I order?"


@pytest.mark.parametrize(
    ("message", "question"),
    [
        ("I'm vegan, which dish should I cook?", "which dish should I cook?"),
        ("I'm vegan, which dish should I cook", "which dish should I cook"),
        ("I'm in Oslo for the week, where can I eat late?", "where can I eat late?"),
        ("The review is at 3pm, when should I leave?", "when should I leave?"),
        ("I use the repo daily, which has 165 commits, what should I do next?", "what should I do next?"),
        (
            "I need the API response under 250ms, can I get some help with that?",
            "can I get some help with that?",
        ),
        ("We deploy on Fridays, could we move it?", "could we move it?"),
    ],
)
def test_a_question_after_a_comma_is_split_off(message: str, question: str) -> None:
    analysis = analyse(message)
    assert analysis.question == question
    assert analysis.facts, analysis


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        (
            "I tagged release v1.0.0 on April 20, which has been pushed with 150 commits and 12 branches merged.",
            "150 commits",
        ),
        ("My sister Ana lives in Porto, where she works as a nurse.", "works as a nurse"),
        ("I met my mentor Sarah, who is a pastry chef.", "pastry chef"),
        ("I moved to Lisbon in May, when the new job started.", "new job started"),
        ("I use the repo daily, which has 165 commits, what should I do next?", "165 commits"),
    ],
)
def test_a_relative_clause_stays_with_its_statement(message: str, kept: str) -> None:
    """ "which", "who", "where" and "when" after a comma add to a statement more often than they ask: the
    clause is part of the fact, not a question dropped with its number or name."""
    analysis = analyse(message)
    assert any(kept in f.content for f in analysis.facts), analysis


@pytest.mark.parametrize(
    ("message", "stated", "subject"),
    [
        (
            "how can I balance my career with essay writing, considering I'm 35 and earning around $85,000 annually?",
            "I'm 35 and earning around $85,000 annually.",
            None,
        ),
        (
            "how can I keep this motivation going, especially since I've met 30 editors at the festival?",
            "I've met 30 editors at the festival.",
            None,
        ),
        (
            "Can you suggest a dinner dish, given that I am strictly vegetarian?",
            "I am strictly vegetarian",
            "diet",
        ),
        (
            "What should I read next, since my favourite author is Le Guin?",
            "My favourite author is Le Guin.",
            "author",
        ),
        (
            "can you help me with an example, considering I'm using SQLite 3.39 can you add error handling?",
            "I'm using SQLite 3.39",
            None,
        ),
    ],
)
def test_what_a_question_gives_as_its_reason_is_kept(message: str, stated: str, subject: str | None) -> None:
    """The user's circumstances after "considering", "since" or "given that" in a question are a statement
    (the question is still asked whole)."""
    analysis = analyse(message)
    assert analysis.question == message
    [fact] = analysis.facts
    assert fact.content.startswith(stated), fact
    assert "?" not in fact.content
    assert subject is None or fact.subject == subject


@pytest.mark.parametrize(
    "message",
    ["how should I plan my week, considering my age and all?", "Is it worth it, since the price went up?"],
)
def test_a_reason_that_is_not_the_users_statement_adds_nothing(message: str) -> None:
    assert analyse(message).facts == ()


def test_a_reason_inside_a_statement_stays_in_it() -> None:
    [fact] = analyse("I'm moving to Lisbon, since my job moved there").facts
    assert "my job moved there" in fact.content


def test_remember_then_ask() -> None:
    analysis = analyse("Remember my gate code is 7781. Which door should I use?")
    assert [f.subject for f in analysis.facts] == ["gate code"]
    assert analysis.question == "Which door should I use?"


@pytest.mark.parametrize(
    "message",
    ["hi", "Hello!", "thanks", "Thank you so much!", "ok", "cool, thanks", "Good morning", "that's helpful"],
)
def test_chitchat_yields_nothing(message: str) -> None:
    analysis = analyse(message)
    assert analysis == Analysis((), (), None, True)


def test_greeting_before_a_fact_is_not_chitchat() -> None:
    analysis = analyse("Hi! I prefer oat milk.")
    assert not analysis.is_greeting_or_chitchat
    assert [f.type for f in analysis.facts] == ["preference"]


# --- negative and structural cases ------------------------------------------------------------


def test_policy_statement_is_a_fact_not_a_user_constraint() -> None:
    fact = only_fact("the password policy requires 12 characters")
    assert (fact.type, fact.subject) == ("fact", None)


def test_request_verb_is_not_a_fact() -> None:
    assert analyse("Translate this paragraph into German").facts == ()


def test_multiple_sentences_give_several_intents() -> None:
    analysis = analyse(
        "I live in Oslo and I work at Equinor. Also, I prefer tea. Forget my old phone number."
    )
    assert [(f.type, f.subject) for f in analysis.facts] == [
        ("identity", "home city"),
        ("identity", "employer"),
        ("preference", "tea"),
    ]
    assert [f.subject for f in analysis.forgets] == ["phone number"]


def test_list_of_preferences_splits_by_slot() -> None:
    analysis = analyse("I prefer a Django backend, a Vue frontend, and dark mode.")
    assert [f.subject for f in analysis.facts] == ["backend framework", "frontend framework", "theme"]


def test_same_slot_list_is_not_split() -> None:
    assert len(analyse("I like React and Vite").facts) == 1


def test_abbreviations_and_dotted_names_do_not_split_sentences() -> None:
    analysis = analyse("We will use Next.js, e.g. for the marketing site. The .env file holds secrets.")
    assert len(analysis.facts) == 2


# --- extract_facts ----------------------------------------------------------------------------


def test_extract_facts_uses_only_user_turns_in_order() -> None:
    facts = extract_facts(
        [
            ("user", "I live in Ghent."),
            ("assistant", "Got it, you live in Ghent and you love waffles."),
            ("user", "What's the weather like?"),
            ("user", "Actually I moved to Antwerp."),
        ]
    )
    assert [f.subject for f in facts] == ["home city", "home city"]
    assert "Antwerp" in facts[-1].content
    assert facts[-1].is_correction


def test_extract_facts_keeps_the_latest_restatement() -> None:
    facts = extract_facts(
        [("user", "My editor is vim."), ("user", "My editor is nano."), ("user", "My editor is vim.")]
    )
    assert [f.content for f in facts] == ["My editor is nano.", "My editor is vim."]


# --- normalise_subject ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("UI theme", "theme"),
        ("my colour scheme", "theme"),
        ("theme preference", "theme"),
        ("the Front-End framework", "frontend framework"),
        ("frontend", "frontend framework"),
        ("API framework", "backend framework"),
        ("our backend", "backend framework"),
        ("my dinner budget", "dinner budget"),
        ("  Favourite   Books ", "book"),
        ("my sister's home city", "sister home city"),
        ("AWS", "aws"),
        ("hobbies", "hobby"),
    ],
)
def test_normalise_subject(raw: str, expected: str) -> None:
    assert normalise_subject(raw) == expected


# --- structure details found by probing -------------------------------------------------------


def test_all_question_sentence_is_asked_whole() -> None:
    message = "Choose a hotel for the trip and remind me what I can spend."
    assert analyse(message).question == message


def test_forget_everything_names_no_slot() -> None:
    forgets = analyse("Please wipe everything you remember about me").forgets
    assert [(f.description, f.subject) for f in forgets] == [("everything", None)]


def test_bare_remove_it_is_swallowed_with_the_named_forget() -> None:
    analysis = analyse("I'd prefer you didn't store the karaoke thing, delete it")
    assert analysis.facts == ()
    assert [f.subject for f in analysis.forgets] == ["karaoke"]


def test_relative_home_city_is_one_slot() -> None:
    seed = only_fact("My grandmother resides in Lyon")
    update = only_fact("Correction: my grandmother is living in Nantes now, not Lyon")
    assert seed.subject == update.subject == "grandmother home city"
    assert update.previous_value == "Lyon"


def test_comma_separated_first_person_clauses() -> None:
    facts = analyse("I changed jobs, I now work at Initech").facts
    assert [f.subject for f in facts] == [None, "employer"]


def test_component_uses_tool_is_a_decision_on_that_slot() -> None:
    assert (only_fact("Our CI runs on Jenkins").type, only_fact("Our CI runs on Jenkins").subject) == (
        "decision",
        "ci",
    )
    assert only_fact("The frontend uses Svelte").subject == "frontend framework"


def test_task_keeps_its_date_as_hint() -> None:
    fact = only_fact("Don't let me forget to book the vet on Thursday")
    assert (fact.type, fact.expires_hint) == ("task", "Thursday")
    assert fact.content == "I need to book the vet on Thursday."


def test_polite_remember_question_stores_a_clean_statement() -> None:
    assert only_fact("Could you remember that I take my coffee black?").content == "I take my coffee black."


@pytest.mark.parametrize("message", ["lol ok", "ok cool thanks", "yes!"])
def test_interjection_only_messages_are_chitchat(message: str) -> None:
    assert analyse(message).is_greeting_or_chitchat


# --- critical rules: imperative rules and prohibitions only ------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "That must have been tough for you, Caroline.",
        "It must be scary stepping into the unknown.",
        "You must be so proud of her.",
        "Congrats - you must be so stoked.",
        "You must try it, it's amazing.",
        "You must really enjoy having them around.",
        "Having pets must be a wonderful experience.",
        "The connection to nature must be incredible.",
        "Your shoes must have a lot of stories behind them.",
        "Must have been such an adrenaline rush.",
        "Dairy-free is a must for me, especially for desserts.",
        "Never been to something like that.",
        "Never had a chance to visit it.",
        "Never saw this coming.",
        "Never give up.",
        "Never say never.",
        "Always here to help.",
        "Always up for something sweet.",
        "Always been interested in different cultures.",
        "You never know the difference a kind gesture can make.",
        "You never shy away from a challenge and always try something new.",
        "We always look forward to our family camping trip.",
    ],
)
def test_chat_phrases_with_must_never_or_always_are_not_critical_rules(message: str) -> None:
    assert all(f.type != "critical_rule" for f in analyse(message).facts)


@pytest.mark.parametrize(
    "message",
    [
        "Never use emojis in commit messages",
        "Always be concise",
        "You must not share my address with anyone",
        "We should never deploy on Fridays",
        "All API responses must include a request id",
        "Passwords must not be logged",
        "The response must be in JSON",
        "Don't ever push to production without a review",
        "Under no circumstances delete the backups",
        "Storing card numbers is strictly forbidden",
        "Always format all code snippets with syntax highlighting when I ask about implementation details.",
    ],
)
def test_imperative_rules_and_prohibitions_are_critical_rules(message: str) -> None:
    assert only_fact(message).type == "critical_rule"


@pytest.mark.parametrize(
    ("rule", "conditional"),
    [
        ("Always format dates in the month-day-year style when I ask about deadlines.", True),
        ("Whenever I share code, review it for security first.", True),
        ("If the build fails, page the on-call lead.", True),
        ("Each time I mention a budget, give the currency.", True),
        ("I am strictly vegetarian", False),
        ("Never deploy on Fridays", False),
        ("I'm allergic to peanuts; it's serious.", False),
        ("The quarterly numbers look iffy to me, double-check them", False),
    ],
)
def test_an_instruction_says_when_it_applies_only_with_a_condition(rule: str, conditional: bool) -> None:
    assert states_condition(rule) is conditional
