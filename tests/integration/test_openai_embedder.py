"""OpenAICompatEmbedder through the real openai SDK against the scripted server."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator

import openai
import pytest

from app.embeddings import EmbeddingError, HashEmbedder, OpenAICompatEmbedder
from tests.support.scripted_openai import ScriptedOpenAI

API_KEY = "sk-scripted-SECRET-key-0123456789"
MODEL = "text-embedding-v3"
EMBEDDINGS = "/v1/embeddings"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(embedding_dim=32) as scripted:
        yield scripted


@pytest.fixture
async def client(server: ScriptedOpenAI) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=2, timeout=5.0)
    yield client
    await client.close()


def assert_vectors_close(actual: list[list[float]], expected: list[list[float]]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-9)


def texts(n: int) -> list[str]:
    return [f"memory number {i} about topic {i % 3}" for i in range(n)]


async def test_batch_below_max_is_one_request(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    usage: list[tuple[str, int, float]] = []
    embedder = OpenAICompatEmbedder(client, MODEL, max_batch=10, on_usage=lambda *u: usage.append(u))
    batch = texts(7)

    vectors = await embedder.embed(batch)

    calls = server.calls_to(EMBEDDINGS)
    assert len(calls) == 1
    assert calls[0].body["input"] == batch
    assert calls[0].body["model"] == MODEL
    assert calls[0].body["encoding_format"] == "float"
    assert "dimensions" not in calls[0].body
    assert embedder.name == MODEL
    assert embedder.dim == 32  # learned from the response
    # The scripted server answers with HashEmbedder vectors, so the expected values are known.
    assert_vectors_close(vectors, await HashEmbedder(32).embed(batch))
    assert all(math.fsum(x * x for x in v) == pytest.approx(1.0) for v in vectors)
    assert [(model, tokens) for model, tokens, _ in usage] == [(MODEL, sum(len(t.split()) for t in batch))]
    assert usage[0][2] > 0


async def test_empty_input_makes_no_request(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    assert await OpenAICompatEmbedder(client, MODEL).embed([]) == []
    assert server.calls == []


async def test_batch_above_max_is_split_minimally(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    embedder = OpenAICompatEmbedder(client, MODEL, max_batch=10)
    batch = texts(25)

    vectors = await embedder.embed(batch)

    calls = server.calls_to(EMBEDDINGS)
    assert [len(call.body["input"]) for call in calls] == [10, 10, 5]
    assert [text for call in calls for text in call.body["input"]] == batch
    assert_vectors_close(vectors, await HashEmbedder(32).embed(batch))


async def test_exact_multiple_of_max_batch(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    await OpenAICompatEmbedder(client, MODEL, max_batch=4).embed(texts(8))
    assert [len(call.body["input"]) for call in server.calls_to(EMBEDDINGS)] == [4, 4]


async def test_results_are_ordered_by_index(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    server.reverse_embeddings = True
    batch = ["alpha beta", "gamma delta", "epsilon zeta"]

    vectors = await OpenAICompatEmbedder(client, MODEL).embed(batch)

    assert_vectors_close(vectors, await HashEmbedder(32).embed(batch))


async def test_dimensions_sent_only_when_configured(
    server: ScriptedOpenAI, client: openai.AsyncOpenAI
) -> None:
    embedder = OpenAICompatEmbedder(client, MODEL, dim=16)
    assert embedder.dim == 16
    (vector,) = await embedder.embed(["hello world"])
    assert len(vector) == 16
    assert server.calls_to(EMBEDDINGS)[0].body["dimensions"] == 16


async def test_dim_unknown_before_first_response(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    embedder = OpenAICompatEmbedder(client, MODEL)
    with pytest.raises(EmbeddingError, match="unknown"):
        _ = embedder.dim
    assert await embedder.ensure_dim() == 32
    assert len(server.calls_to(EMBEDDINGS)) == 1


async def test_dimension_mismatch_raises(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    embedder = OpenAICompatEmbedder(client, MODEL)
    await embedder.embed(["first"])
    server.embedding_dim = 48  # the provider silently changed models
    with pytest.raises(EmbeddingError, match="expected 32-d"):
        await embedder.embed(["second"])


async def test_rate_limit_is_retried_by_sdk(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    server.fail_next(status=429, times=1, path="embeddings")

    vectors = await OpenAICompatEmbedder(client, MODEL).embed(["retry me"])

    assert len(vectors) == 1
    assert [call.status for call in server.calls_to(EMBEDDINGS)] == [429, 200]


async def test_server_errors_exhaust_retries(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    server.fail_next(status=503, times=3)

    with pytest.raises(EmbeddingError) as excinfo:
        await OpenAICompatEmbedder(client, MODEL).embed(["x"])

    assert excinfo.value.status_code == 503
    assert excinfo.value.retryable
    assert [call.status for call in server.calls] == [503, 503, 503]  # 1 try + max_retries=2


async def test_unauthorized_is_not_retried_and_hides_key(
    server: ScriptedOpenAI, client: openai.AsyncOpenAI
) -> None:
    server.fail_next(status=401)

    with pytest.raises(EmbeddingError) as excinfo:
        await OpenAICompatEmbedder(client, MODEL).embed(["x"])

    calls = server.calls
    assert [call.status for call in calls] == [401]
    # The server did see the key and echoed it in its error message, like real providers.
    assert calls[0].headers["authorization"] == f"Bearer {API_KEY}"
    error = excinfo.value
    assert error.status_code == 401
    assert not error.retryable
    assert "401" in str(error)
    assert "invalid_api_key" in str(error)
    assert API_KEY not in str(error)
    assert "SECRET" not in repr(error)
    # No chained SDK exception (whose text holds the key) shows up in tracebacks.
    assert error.__cause__ is None
    assert error.__suppress_context__


async def test_key_shaped_secrets_are_redacted_even_if_not_the_client_key(
    server: ScriptedOpenAI, client: openai.AsyncOpenAI
) -> None:
    server.fail_next(status=400, message="bad header Bearer abc.def.ghi and key sk-other-0123456789")
    with pytest.raises(EmbeddingError) as excinfo:
        await OpenAICompatEmbedder(client, MODEL).embed(["x"])
    assert "abc.def.ghi" not in str(excinfo.value)
    assert "sk-other-0123456789" not in str(excinfo.value)


async def test_timeout_raises_embedding_error(server: ScriptedOpenAI) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=0.3)
    try:
        server.delay_next(3.0, path="embeddings")
        with pytest.raises(EmbeddingError, match="timed out") as excinfo:
            await OpenAICompatEmbedder(client, MODEL).embed(["slow"])
        assert excinfo.value.retryable
        # The abandoned request is logged as 499 once the server notices the disconnect.
        calls = await server.wait_for_calls_async(1)
        assert [call.status for call in calls] == [499]
    finally:
        await client.close()


async def test_timeout_then_success_with_retry(server: ScriptedOpenAI) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=1, timeout=0.3)
    try:
        server.delay_next(3.0, path="embeddings")
        vectors = await OpenAICompatEmbedder(client, MODEL).embed(["slow then fast"])
        assert len(vectors) == 1
        calls = await server.wait_for_calls_async(2)
        assert sorted(call.status for call in calls) == [200, 499]
    finally:
        await client.close()


async def test_connection_refused_raises_embedding_error() -> None:
    with ScriptedOpenAI() as stopped:
        base_url = stopped.base_url
    client = openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, timeout=2.0)
    try:
        with pytest.raises(EmbeddingError, match="connect") as excinfo:
            await OpenAICompatEmbedder(client, MODEL).embed(["x"])
        assert API_KEY not in str(excinfo.value)
    finally:
        await client.close()


async def test_aclose_leaves_shared_client_open(server: ScriptedOpenAI, client: openai.AsyncOpenAI) -> None:
    embedder = OpenAICompatEmbedder(client, MODEL)
    await embedder.aclose()
    assert not client.is_closed()
    owning = OpenAICompatEmbedder(
        openai.AsyncOpenAI(base_url=server.base_url, api_key=API_KEY), MODEL, owns_client=True
    )
    await owning.aclose()
