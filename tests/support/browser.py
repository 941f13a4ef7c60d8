"""Debian's chromium driven by Playwright, headless, the way this machine and CI can run it.

Test tools cannot download a browser here, so Playwright is pointed at `/usr/bin/chromium`
(`deploy/test.sh` installs it). A missing browser is a failure with a message, never a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.async_api import Browser, Playwright

CHROMIUM = Path(os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium"))
# As root in a container: no sandbox, no GPU; nothing in the background that could reach a network.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class BrowserMissing(RuntimeError):
    pass


def chromium_path() -> Path:
    """The browser binary, or a clear error saying how to install it."""
    found = CHROMIUM if CHROMIUM.exists() else None
    if found is None and (which := shutil.which("chromium")):
        found = Path(which)
    if found is None:
        raise BrowserMissing(
            f"chromium not found at {CHROMIUM} or on PATH: the browser tests need Debian's chromium "
            "(`apt-get install chromium`; deploy/test.sh installs it) or ENGRAM_CHROMIUM=/path/to/chromium"
        )
    return found


async def launch(playwright: Playwright) -> Browser:
    """A headless chromium with a fresh profile (Playwright gives every launch a new temporary one)."""
    return await playwright.chromium.launch(executable_path=str(chromium_path()), args=ARGS, headless=True)
