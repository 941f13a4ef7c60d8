"""One request's context: what every service of the request shares, built once by the API layer
(`app/api/deps.py`), by a CLI command or by a bench, and handed to each service.

No service reads another service's dependencies: each takes this context and nothing else of the
request. The clients in it (embedder, spare connections, reinforcement batches) are the process's,
built once in the app's lifespan; the store is bound to the request's session and tenant.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.spare import SpareReads
from app.embeddings.base import Embedder
from app.lib.clock import Clock
from app.lib.ranking import RankingPolicy
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.store import Store
from app.store.access import Reinforcements
from app.store.limits import Limits, StoredCounts, ensure_room, ensure_tokens
from app.store.plan import SCOPE_SIZES, ScopeSizes
from app.store.terms import TERM_INDEX, TermIndex
from app.tenancy.types import TenantId


@dataclass(frozen=True, slots=True)
class RequestContext:
    tenant: TenantId
    actor: str  # who acts: "key:<id>" for an API key, "cli", "maintenance", ...
    store: Store
    embedder: Embedder
    settings: Settings
    policy: RankingPolicy
    counter: TokenCounter
    clock: Clock
    scope_sizes: ScopeSizes = SCOPE_SIZES  # shared by the process: large scopes' counts
    terms: TermIndex = TERM_INDEX  # shared by the process: scopes' terms for recall's text half
    reinforcements: Reinforcements | None = None  # None: recall reinforces in its own transaction
    spare: SpareReads | None = None  # None: recall's two halves run in one statement
    limits: Limits | None = None  # the tenant's limits (None: none enforced, as in the CLI)
    stored: StoredCounts | None = None  # the process's memory counts for the storage quota

    @classmethod
    def build(
        cls,
        session: AsyncSession,
        tenant: TenantId,
        actor: str,
        *,
        embedder: Embedder,
        settings: Settings,
        clock: Clock,
        counter: TokenCounter | None = None,
        policy: RankingPolicy | None = None,
        reinforcements: Reinforcements | None = None,
        spare: SpareReads | None = None,
        terms: TermIndex | None = None,
        limits: Limits | None = None,
        stored: StoredCounts | None = None,
    ) -> RequestContext:
        """A context over `session`, bound to `tenant` (the caller has set the session's tenant)."""
        return cls(
            tenant=tenant,
            actor=actor,
            store=Store(session, tenant, actor),
            embedder=embedder,
            settings=settings,
            policy=policy
            or RankingPolicy.of(settings, fusion=embedder.fusion, paraphrases=embedder.paraphrases),
            counter=counter or TokenCounter(),
            clock=clock,
            reinforcements=reinforcements,
            spare=spare,
            terms=TERM_INDEX if terms is None else terms,
            limits=limits,
            stored=stored,
        )

    @property
    def session(self) -> AsyncSession:
        return self.store.session

    async def ensure_room(self, adding: int) -> None:
        """Refuse (MemoryQuotaExceeded) a write of `adding` memories past the tenant's quota."""
        if self.limits is not None and self.stored is not None:
            await ensure_room(self.session, self.tenant, self.limits, self.stored, adding)

    async def ensure_tokens(self) -> None:
        """Refuse (TokenQuotaExceeded) a model call once the tenant's daily tokens are spent."""
        if self.limits is not None:
            await ensure_tokens(self.session, self.tenant, self.limits)

    def relevance_floor(self) -> float:
        return self.policy.floor(self.embedder.relevance_floor)
