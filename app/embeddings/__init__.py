"""Embedding backends behind one :class:`Embedder` protocol.

* :class:`HashEmbedder` - lexical feature hashing, stdlib only, deterministic (default, tests).
* :class:`LocalEmbedder` - all-MiniLM-L6-v2 on CPU (``local`` extra; torch is imported lazily).
* :class:`OpenAICompatEmbedder` - any OpenAI-compatible ``/v1/embeddings`` provider.
"""

from app.embeddings.base import (
    Embedder,
    EmbeddingError,
    SupersedeThresholds,
    l2_normalise,
    numeric_tokens_differ,
)
from app.embeddings.hashing import HashEmbedder
from app.embeddings.local import LocalEmbedder, local_embedder_available
from app.embeddings.openai_compat import DEFAULT_OPENAI_THRESHOLDS, OpenAICompatEmbedder, UsageCallback

__all__ = [
    "DEFAULT_OPENAI_THRESHOLDS",
    "Embedder",
    "EmbeddingError",
    "HashEmbedder",
    "LocalEmbedder",
    "OpenAICompatEmbedder",
    "SupersedeThresholds",
    "UsageCallback",
    "l2_normalise",
    "local_embedder_available",
    "numeric_tokens_differ",
]
