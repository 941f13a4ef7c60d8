"""Builds the configured embedder once, at startup."""

from __future__ import annotations

import openai

from app.embeddings.base import Embedder
from app.embeddings.hashing import HashEmbedder
from app.embeddings.local import LocalEmbedder, local_embedder_available
from app.embeddings.openai_compat import OpenAICompatEmbedder
from app.lib.settings import Settings
from app.usage.meter import record_embedding_usage
from app.usage.metered import MeteredEmbedder


async def build_embedder(settings: Settings) -> Embedder:
    """The embedder `settings.embedder` names.

    `auto`: an OpenAI-compatible endpoint when a key is set, else the local model when
    installed, else hashing.
    """
    choice = settings.resolved_embedder(local_embedder_available())
    if choice == "hash":
        return MeteredEmbedder(HashEmbedder(dim=settings.hash_dim))
    if choice == "local":
        local = await LocalEmbedder.load(
            threads=settings.local_threads,
            parallel=settings.local_parallel(),
            runtime=settings.local_runtime,
            cache_dir=settings.data_dir / "models",
        )
        return MeteredEmbedder(local)
    client = openai.AsyncOpenAI(
        api_key=settings.model_api_key() or "missing",
        base_url=settings.model_base_url(),
        timeout=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
    )
    return OpenAICompatEmbedder(
        client,
        settings.default_embed_model(),
        dim=settings.embed_dim,
        owns_client=True,
        on_usage=record_embedding_usage,
    )
