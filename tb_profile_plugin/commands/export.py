"""`tb-profile export PATH --format chrome-json|perfetto -o OUT [--host H]`.

Writes the whole trace (every event of the shown hosts, on the trace viewer's tracks) for
other viewers: Chrome trace JSON (`chrome://tracing`, Perfetto UI, Speedscope) or Perfetto's
protobuf trace (`ui.perfetto.dev`, trace_processor). Several hosts go on one time axis
(ALL_HOSTS) unless `--host` picks one. The file is streamed, never held in memory whole.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tb_profile_plugin.commands.profiles import locate, open_profiles
from tb_profile_plugin.commands.progress import Progress
from tb_profile_plugin.trace.export_chrome import write_chrome_json
from tb_profile_plugin.trace.export_perfetto import write_perfetto
from tb_profile_plugin.trace.window import trace_set
from tb_profile_plugin.xspace.store import ProfileStore

HELP = "write the whole trace for other viewers (Chrome trace JSON or Perfetto protobuf)"
FORMATS = ("chrome-json", "perfetto")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a logdir (its newest run), a run directory or an .xplane.pb")
    parser.add_argument("--format", choices=FORMATS, default="chrome-json")
    parser.add_argument("-o", "--output", required=True, help="the file to write")
    parser.add_argument("--host", default=None, help="one host (default: every host)")


def run(args: argparse.Namespace) -> int:
    located = locate(args.path, args.host)
    output = Path(args.output)
    with Progress(len(located.files) + 1, located.size_bytes()) as progress:
        profiles = open_profiles(located.files, ProfileStore(), progress)
        progress.stage("indexing the trace")
        trace = trace_set(profiles)
        progress.stage(f"writing {output}")
        partial = output.with_name(output.name + ".partial")
        if args.format == "perfetto":
            with open(partial, "wb") as binary:
                written = write_perfetto(trace, binary)
        else:
            with open(partial, "w", encoding="utf-8") as text:
                written = write_chrome_json(trace, text)
        os.replace(partial, output)
    print(f"tb-profile: wrote {written} events ({args.format}) to {output}", file=sys.stderr)
    return 0
