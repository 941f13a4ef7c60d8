"""The tenant identity type. Only the auth layer (and administration) produces it."""

from __future__ import annotations

import uuid
from typing import NewType

TenantId = NewType("TenantId", uuid.UUID)
