"""Debian's chromium driven by Playwright, headless, the way this machine and CI can run it.

Test tools cannot download a browser here, so Playwright is pointed at `/usr/bin/chromium`
(`deploy/test.sh` installs it). A missing browser is a failure with a message, never a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.async_api import Browser, Playwright

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
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


# The browser binary's variable (README, the CI workflow); ENGRAM_CHROMIUM is its older name, still read.
CHROMIUM_VARIABLES = ("CHROMIUM_PATH", "ENGRAM_CHROMIUM")


def chromium_path() -> Path:
    """The browser binary (`CHROMIUM_PATH`, or its alias `ENGRAM_CHROMIUM`, if set; else Debian's), or an
    error saying how to get it."""
    for variable in CHROMIUM_VARIABLES:
        chosen = os.environ.get(variable)
        if chosen:
            if not Path(chosen).is_file():
                raise BrowserMissing(f"{variable}={chosen} is not a file: the browser tests need chromium")
            return Path(chosen)
    if DEBIAN_CHROMIUM.is_file():
        return DEBIAN_CHROMIUM
    if found := shutil.which("chromium"):
        return Path(found)
    raise BrowserMissing(
        f"chromium is not at {DEBIAN_CHROMIUM} nor on PATH: the browser tests need Debian's chromium "
        "(`apt-get install chromium`, which deploy/test.sh runs) or CHROMIUM_PATH=/path/to/chromium"
    )


async def launch(playwright: Playwright) -> Browser:
    """A headless chromium with a fresh profile (Playwright gives every launch a new temporary one)."""
    return await playwright.chromium.launch(executable_path=str(chromium_path()), args=ARGS, headless=True)
