"""What every memory operation of one request shares: the tenant's repository and the app's clients."""

from __future__ import annotations

from dataclasses import dataclass

from app.db.spare import SpareReads
from app.embeddings.base import Embedder
from app.lib.clock import Clock
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.memory.plan import SCOPE_SIZES, ScopeSizes
from app.memory.reinforcement import Reinforcements
from app.memory.repository import MemoryRepository

# Minimum relevance per embedder family: below it a memory is not about the query at all.
# Hash vectors are lexical (unrelated text sits near 0); sentence embeddings put unrelated
# English text around 0.0-0.2 (MiniLM) or higher (large API models).
DEFAULT_FLOORS = {"hash": 0.12, "local": 0.25, "openai": 0.30}


@dataclass(frozen=True, slots=True)
class MemoryDeps:
    repo: MemoryRepository
    embedder: Embedder
    settings: Settings
    counter: TokenCounter
    clock: Clock
    scope_sizes: ScopeSizes = SCOPE_SIZES  # shared by the process: large scopes' counts
    reinforcements: Reinforcements | None = None  # None: recall reinforces in its own transaction
    spare: SpareReads | None = None  # None: recall's two halves run in one statement

    def relevance_floor(self) -> float:
        if self.settings.min_relevance is not None:
            return self.settings.min_relevance
        name = self.embedder.name
        family = "hash" if name.startswith("hash") else "local" if name == "all-MiniLM-L6-v2" else "openai"
        return DEFAULT_FLOORS[family]
