"""What the browser tests share: where things are, and a recorder of what a page did."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# Each fixture scenario (tests/fixtures.py FIXTURES) is copied to <logdir>/<name>/, so every
# run of a fixture is named "<name>/..." in the Profile tab.
MULTI_HOST_FIXTURE = "two_hosts"
STARTUP_TIMEOUT_S = 60.0
LOCAL_HOST = "127.0.0.1"


@dataclass
class PageRecord:
    """What a page did: console errors, uncaught exceptions, every requested URL."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def foreign_requests(self) -> list[str]:
        """Requests to any host but 127.0.0.1 (data: and blob: URLs are local)."""
        foreign = []
        for url in self.requests:
            if url.startswith(("data:", "blob:", "about:")):
                continue
            host = urllib.parse.urlsplit(url).hostname
            if host != LOCAL_HOST:
                foreign.append(url)
        return foreign
