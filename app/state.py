"""Clients built once per process, in the app's lifespan (never at import time, never per request)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.providers.base import ChatProvider
from app.api.limits import Limiter
from app.context import RequestContext
from app.db.spare import SpareReads
from app.embeddings.base import Embedder
from app.lib.clock import Clock
from app.lib.ranking import RankingPolicy
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter
from app.store.access import Reinforcements
from app.store.limits import Limits
from app.store.terms import TermIndex
from app.tenancy.types import TenantId
from app.webhooks.signing import SigningKey


@dataclass(slots=True)
class Services:
    settings: Settings
    clock: Clock
    counter: TokenCounter
    embedder: Embedder | None = None
    chat: ChatProvider | None = None  # the configured model: online when an endpoint is set
    offline: ChatProvider | None = None  # the offline model: the fallback when the online one fails
    reinforcements: Reinforcements | None = None  # recall's batched reinforcement (None: inline)
    spare: SpareReads | None = None  # connections for recall's text half (None: one statement)
    terms: TermIndex = field(default_factory=TermIndex)  # scopes' terms for recall's text half
    limiter: Limiter | None = None  # per-tenant limits and fairness (None: none, as in benches' direct calls)
    # Change events: the key webhook secrets are derived from (built by create_app).
    webhook_key: SigningKey | None = None
    # The ranking policy for the loaded embedder (its fusion is the embedder's unless the settings name
    # one), built on first use after the embedder is.
    _policy: tuple[Embedder, RankingPolicy] | None = field(default=None, init=False, repr=False)

    def policy(self) -> RankingPolicy:
        embedder = self.require_embedder()
        if self._policy is None or self._policy[0] is not embedder:
            policy = RankingPolicy.of(self.settings, fusion=embedder.fusion, paraphrases=embedder.paraphrases)
            self._policy = (embedder, policy)
        return self._policy[1]

    def require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise RuntimeError("the embedder is not loaded yet (the app's lifespan has not started)")
        return self.embedder

    def require_chat(self) -> tuple[ChatProvider, ChatProvider]:
        if self.chat is None or self.offline is None:
            raise RuntimeError("the chat providers are not built yet (the app's lifespan has not started)")
        return self.chat, self.offline

    def require_webhook_key(self) -> SigningKey:
        if self.webhook_key is None:
            raise RuntimeError("the webhook signing key is not loaded")
        return self.webhook_key

    def context(
        self, session: AsyncSession, tenant: TenantId, actor: str, limits: Limits | None = None
    ) -> RequestContext:
        """A request's context: its session and tenant, the process's clients."""
        return RequestContext.build(
            session,
            tenant,
            actor,
            embedder=self.require_embedder(),
            settings=self.settings,
            clock=self.clock,
            counter=self.counter,
            policy=self.policy(),
            reinforcements=self.reinforcements,
            spare=self.spare,
            terms=self.terms,
            limits=limits,
            stored=self.limiter.stored if self.limiter is not None else None,
        )
