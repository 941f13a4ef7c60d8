"""The quality benchmark's dataset adapters on small hand-made inputs: LoCoMo, BEAM, the neutral format."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.quality import beam, locomo
from bench.quality.model import Dataset, from_neutral, to_neutral

# -- LoCoMo ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "ids", "dropped"),
    [
        (["D1:3"], ["D1:3"], []),
        (["D8:6; D9:17"], ["D8:6", "D9:17"], []),
        (["D30:05"], ["D30:5"], []),
        (["D:11:26"], ["D11:26"], []),
        (["D1:18", "D", "D1:20"], ["D1:18", "D1:20"], ["D"]),
        (["D2:1,D2:2 D2:1"], ["D2:1", "D2:2"], []),
        (["D99:1"], [], ["D99:1"]),  # names no turn
    ],
)
def test_locomo_evidence_is_split_unpadded_and_checked(
    raw: list[str], ids: list[str], dropped: list[str]
) -> None:
    known = {"D1:3", "D8:6", "D9:17", "D30:5", "D11:26", "D1:18", "D1:20", "D2:1", "D2:2"}
    assert locomo.normalise_evidence(raw, known) == (ids, dropped)


def test_locomo_session_time() -> None:
    assert locomo.parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert locomo.parse_session_time("10:04 am on 20 January, 2023") == datetime(
        2023, 1, 20, 10, 4, tzinfo=UTC
    )


def _locomo_sample() -> list[dict[str, object]]:
    return [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1_date_time": "9:00 am on 1 March, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a boat"},
                ],
                "session_2_date_time": "6:30 pm on 4 April, 2023",
                "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The cat is called Tom."}],
            },
            "qa": [
                {
                    "question": "What is the cat called?",
                    "answer": "Tom",
                    "evidence": ["D2:01"],
                    "category": 4,
                },
                {"question": "When?", "answer": "x", "evidence": ["D1:1; D2:1"], "category": 2},
                {"question": "Bo's cat?", "adversarial_answer": "y", "evidence": ["D1:1"], "category": 5},
                {"question": "Unlabelled?", "answer": "z", "evidence": [], "category": 1},
            ],
        }
    ]


def test_locomo_convert_keeps_speakers_times_captions_and_groups() -> None:
    data = locomo.convert(_locomo_sample())
    [conv] = data.conversations
    assert [t.id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[0].speaker == "Ann"
    assert conv.turns[0].role == "user"
    assert conv.turns[1].text == "Look! [shares a photo: a photo of a boat]"
    assert conv.turns[1].at == datetime(2023, 3, 1, 9, 1, tzinfo=UTC)  # one minute after the first turn
    assert conv.turns[2].session_id == "S2"
    q = {x.question: x for x in data.questions}
    assert q["What is the cat called?"].evidence == ("D2:1",)
    assert q["What is the cat called?"].category == "single-hop"
    assert q["When?"].evidence == ("D1:1", "D2:1")
    assert q["Bo's cat?"].group == "adversarial"
    assert q["Unlabelled?"].group == "no_evidence"


# -- BEAM ------------------------------------------------------------------------------------------


def test_beam_ids_flatten_nested_lists() -> None:
    assert beam.flatten_ids([1, [2, 3], [[4]], 2]) == ["1", "2", "3", "4"]
    assert beam.flatten_ids(None) == []


def test_beam_evidence_by_question_kind() -> None:
    update = {"original_info": [86], "updated_info": [114]}
    assert beam.evidence_of("knowledge_update", update) == (["114"], ["86"], "update")
    contradiction = {"first_statement": [58], "second_statement": [24]}
    assert beam.evidence_of("contradiction_resolution", contradiction) == (["58", "24"], [], "contradiction")
    assert beam.evidence_of("temporal_reasoning", {"first_event": [2], "second_event": [0]}) == (
        ["2", "0"],
        [],
        None,
    )
    assert beam.evidence_of("event_ordering", [4, [6, 8]]) == (["4", "6", "8"], [], None)
    assert beam.evidence_of("abstention", None) == ([], [], None)


def _beam_chat() -> list[dict[str, object]]:
    return [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    {
                        "role": "user",
                        "id": 0,
                        "time_anchor": "March-15-2024",
                        "content": "Deadline is March 29 ->-> 1,1",
                    },
                    {"role": "assistant", "id": 1, "content": "Noted."},
                ],
                [{"role": "user", "id": 2, "content": "API takes 400ms ->-> 1,2"}],
            ],
        },
        {
            "batch_number": 2,
            "turns": [[{"role": "user", "id": 3, "time_anchor": "April-05-2024", "content": "Now 250ms."}]],
        },
    ]


def test_beam_convert_dates_markers_and_questions() -> None:
    probing = {
        "knowledge_update": [
            {"question": "API latency?", "source_chat_ids": {"original_info": [2], "updated_info": [3]}}
        ],
        "abstention": [{"question": "Unknown?"}],
        "information_extraction": [{"question": "Missing id?", "source_chat_ids": [99]}],
    }
    conv, questions, dropped = beam.convert_chat("c1", _beam_chat(), probing)
    assert [t.id for t in conv.turns] == ["0", "1", "2", "3"]
    assert conv.turns[0].text == "Deadline is March 29"
    assert conv.turns[0].at == datetime(2024, 3, 15, tzinfo=UTC)
    assert conv.turns[2].at == datetime(2024, 3, 16, tzinfo=UTC)  # second session: a day later
    assert conv.turns[3].at == datetime(2024, 4, 5, tzinfo=UTC)
    by_q = {q.question: q for q in questions}
    assert by_q["API latency?"].evidence == ("3",)
    assert by_q["API latency?"].stale_evidence == ("2",)
    assert by_q["API latency?"].kind == "update"
    assert by_q["Unknown?"].group == "abstention"
    assert by_q["Missing id?"].group == "no_evidence"
    assert dropped == 1


def test_beam_sessions_are_squeezed_before_the_next_anchor() -> None:
    chat = _beam_chat()
    chat[1]["turns"][0][0]["time_anchor"] = "March-16-2024"  # type: ignore[index]
    conv, _, _ = beam.convert_chat("c1", chat, {})
    times = [t.at for t in conv.turns]
    assert times == sorted(times)
    assert conv.turns[2].at == datetime(2024, 3, 15, 12, tzinfo=UTC)  # two sessions share the one day


# -- neutral format ----------------------------------------------------------------------------------


def _neutral() -> dict[str, object]:
    return {
        "name": "tiny",
        "conversations": [
            {
                "id": "c1",
                "user_id": "u1",
                "sessions": [
                    {
                        "id": "s1",
                        "date": "2024-05-01",
                        "turns": [
                            {"id": "t1", "role": "user", "text": "I live in Porto."},
                            {"id": "t2", "role": "assistant", "text": "Nice."},
                        ],
                    },
                    {
                        "id": "s2",
                        "date": None,
                        "project": "p",
                        "turns": [{"id": "t3", "role": "user", "text": "Lisbon now."}],
                    },
                ],
            }
        ],
        "questions": [
            {
                "id": "q1",
                "conversation_id": "c1",
                "question": "Where do I live?",
                "category": "update",
                "evidence": ["t3"],
                "stale_evidence": ["t1"],
                "expected": [],
                "stale": [],
            },
            {"id": "q2", "conversation_id": "c1", "question": "Pet?", "expected": ["cat"], "stale": ["dog"]},
        ],
    }


def test_neutral_format_reads_dates_defaults_and_round_trips() -> None:
    data = from_neutral(_neutral())
    [conv] = data.conversations
    assert conv.user_id == "u1"
    assert conv.turns[0].at == datetime(2024, 5, 1, tzinfo=UTC)
    assert conv.turns[1].at == datetime(2024, 5, 1, 0, 1, tzinfo=UTC)
    assert conv.turns[2].at == datetime(2024, 5, 2, tzinfo=UTC)  # undated session: a day after the previous
    assert conv.turns[2].project == "p"
    q1, q2 = data.questions
    assert q1.by_ids
    assert q1.group == "main"
    assert not q2.by_ids
    assert q2.expected == ("cat",)
    again = from_neutral(to_neutral(data))
    assert again.questions == data.questions
    assert again.conversations == data.conversations


def test_dataset_limit_keeps_questions_of_kept_conversations() -> None:
    data = from_neutral(_neutral())
    empty = Dataset("x", "json", [], [])
    assert data.limit(None) is data
    assert data.limit(0).questions == empty.questions
