#!/usr/bin/env python
"""Digests of every view's document on every run under a logdir: the check that a change of
structure changed no behaviour.

    PYTHONPATH=. python scripts/doc_digest.py [LOGDIR ...] > before.txt
    ... change the code ...
    PYTHONPATH=. python scripts/doc_digest.py [LOGDIR ...] > after.txt && diff before.txt after.txt

One line per (run, host, view): the sha256 of the document exactly as `tb-profile view` prints
it (ALL_HOSTS too, for views that combine the hosts of a several-host run), or the error it
raised. LOGDIR defaults to tests/data (every committed capture). The disk cache is off, so
every document is computed from the file; run it again with `TB_PROFILE_PURE_DECODER=1
TB_PROFILE_PURE_NESTING=1 TB_PROFILE_PURE_LOD=1 TB_PROFILE_PURE_STEPS=1` for the numpy paths.
"""

from __future__ import annotations

import hashlib
import os
import sys

os.environ["TB_PROFILE_CACHE_DIR"] = "off"

from tb_profile_plugin.commands.output import to_json  # noqa: E402
from tb_profile_plugin.commands.profiles import locate, view_request  # noqa: E402
from tb_profile_plugin.commands.progress import Progress  # noqa: E402
from tb_profile_plugin.errors import ProfileError  # noqa: E402
from tb_profile_plugin.logdir import ALL_HOSTS, LogDir  # noqa: E402
from tb_profile_plugin.tools import registry  # noqa: E402


def digests(logdir: str) -> list[str]:
    lines = []
    for run in LogDir(logdir).runs():
        run_dir = os.path.dirname(run.xplane_path(run.hosts[0]))
        hosts = list(run.hosts) + ([ALL_HOSTS] if len(run.hosts) > 1 else [])
        for host in hosts:
            located = locate(run_dir, None if host == ALL_HOSTS else host)
            with Progress(0, 0, open(os.devnull, "w")) as progress:
                request = view_request(located, host, {}, progress)
                facts = request.run_facts()
                for view in registry.ordered_views():
                    if host == ALL_HOSTS and not view.combines_hosts:
                        continue
                    if not view.available(facts):
                        continue
                    try:
                        text = to_json(registry.build_document(view, request))
                        digest = hashlib.sha256(text.encode()).hexdigest()
                    except ProfileError as error:
                        digest = f"error {type(error).__name__}: {error}"
                    lines.append(f"{os.path.relpath(run_dir, logdir)} {host} {view.name} {digest}")
    return lines


def main() -> None:
    for logdir in sys.argv[1:] or ["tests/data"]:
        for line in digests(logdir):
            print(line, flush=True)


if __name__ == "__main__":
    main()
