"""All SQL of Engram's memory domain, split by the question it answers.

| module | answers |
|---|---|
| `scope.py` | what a scope of memories includes (the one definition, as SQL) |
| `candidates.py` | recall: the candidates of a query, and how large a scope is |
| `keywords.py`, `terms.py` | recall's text half before the vector: in SQL, or from a scope's term index |
| `plan.py` | whether a scope is read exactly or through HNSW (pure rule + a per-process count cache) |
| `writes.py` | the write path: slot locks, a slot's current memory, live twins, nearest neighbours |
| `events.py` | the audit trail: the one recorder every change goes through, timeline and history reads |
| `access.py` | access counts (reinforcement), and the background batches that write them |
| `reads.py` | a memory by id, lists, the live memories of a scope, stats |
| `proposals.py` | dream proposals: stored, paged, locked for apply |
| `spaces.py` | shared spaces and the agents granted on them |
| `pages.py` | keyset pagination over (created_at, id), shared by every list |
| `maintenance.py`, `portability.py`, `erase.py` | the lifecycle sweep, export/import/re-embed, erase |

Every statement names the tenant; row-level security in PostgreSQL is the second wall. `Store` bundles
one tenant's stores for one request's session.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from app.store.access import AccessStore
from app.store.candidates import RecallStore
from app.store.events import EventRecorder
from app.store.keywords import KeywordReads
from app.store.proposals import ProposalStore
from app.store.reads import MemoryReads
from app.store.spaces import SpaceStore
from app.store.writes import WriteStore
from app.tenancy.types import TenantId


class Store:
    """One tenant's stores over one session (a request's, a CLI command's or a background batch's)."""

    def __init__(self, session: AsyncSession, tenant: TenantId, actor: str) -> None:
        self.session = session
        self.tenant = tenant
        self.recall = RecallStore(session, tenant)
        self.keywords = KeywordReads(session, tenant)
        self.writes = WriteStore(session, tenant)
        self.reads = MemoryReads(session, tenant)
        self.events = EventRecorder(session, tenant, actor)
        self.access = AccessStore(session, tenant)
        self.proposals = ProposalStore(session, tenant)
        self.spaces = SpaceStore(session, tenant)

    async def flush(self) -> None:
        """Send pending ORM changes now, so a failure surfaces before the response (services flush,
        never commit: the request's unit of work commits)."""
        await self.session.flush()
