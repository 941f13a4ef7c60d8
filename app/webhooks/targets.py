"""Where a webhook may point: http or https, no credentials in the URL, and (unless allowed) no
loopback, private, link-local or otherwise non-public address, checked when the webhook is created and
again before every delivery (a name may resolve elsewhere later)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

from app.lib.errors import ValidationFailed

MAX_URL_CHARS = 2000


class TargetRefused(Exception):
    """The URL is not one Engram will send to; the message says why (no secrets, no content)."""


def check_url(url: str) -> str:
    """The URL, normalised enough to store, or ValidationFailed (a 422) saying what is wrong."""
    if len(url) > MAX_URL_CHARS:
        raise ValidationFailed(f"url must be at most {MAX_URL_CHARS} characters")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise ValidationFailed("url must not contain whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValidationFailed(f"url is not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https"):
        raise ValidationFailed("url must be http or https")
    if not parts.hostname:
        raise ValidationFailed("url must name a host")
    if parts.username is not None or parts.password is not None:
        raise ValidationFailed("url must not carry credentials (they would be stored); sign with the secret")
    if port == 0:
        raise ValidationFailed("url must not use port 0")
    return url


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def check_target(url: str, *, allow_private: bool) -> None:
    """Resolve the URL's host and refuse it unless every address is public (or private ones are allowed)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise TargetRefused(f"the host {host!r} does not resolve") from exc
    if allow_private:
        return
    addresses = {str(info[4][0]) for info in infos}
    if not addresses or not all(_public(a) for a in addresses):
        raise TargetRefused(
            f"the host {host!r} resolves to a loopback, private or reserved address"
            " (ENGRAM_WEBHOOK_ALLOW_PRIVATE=true allows it)"
        )
