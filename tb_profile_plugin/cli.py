"""The `tb-profile` command line: serve a logdir, run the demo, print a view's document.

    tb-profile demo [--port P]                 TensorBoard on the bundled demo profiles
    tb-profile serve LOGDIR [--port P]         TensorBoard with this plugin on LOGDIR
    tb-profile summary PATH [--host H] [--json]  the overview of a profile, for a terminal
    tb-profile view PATH VIEW [--json|--csv]   a view's JSON document or one of its tables
    tb-profile diff A B [--json]               what changed between two profiles
    tb-profile diff A B --fail-if-slower PCT   ... and exit 7 when B's step time is > PCT % slower
    (PATH: a logdir, a run directory or an .xplane.pb)

Exit codes: 0 success, 2 usage error, 3 no profile found, 4 unreadable profile,
6 the Dask scheduler (--scheduler, TB_PROFILE_SCHEDULER) cannot be reached, 7 `diff
--fail-if-slower`: slower than allowed, 8 `diff --fail-if-slower`: a side has no steps.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from tb_profile_plugin.errors import ProfileError

DEMO_DIR = Path(__file__).resolve().parent / "demo"

#: Subcommands that live in their own modules, in the order `--help` lists them: command name
#: -> module. Each module defines `HELP: str`, `add_arguments(parser)` and `run(args) -> int`
#: (returning an exit code; raising `ProfileError` is turned into its message and exit code).
COMMAND_MODULES: dict[str, str] = {
    "summary": "tb_profile_plugin.commands.summary",
    "view": "tb_profile_plugin.commands.view",
    "diff": "tb_profile_plugin.commands.diff",
    "capture": "tb_profile_plugin.commands.capture",
    "export": "tb_profile_plugin.commands.export",
}


def _tensorboard(logdir: str, port: int, host: str, scheduler: str | None = None) -> int:
    from tensorboard import program

    from tb_profile_plugin.analysis.hosts import executors

    executors.configure(scheduler)
    argv = [sys.argv[0], "--logdir", logdir, "--port", str(port), "--host", host]
    if scheduler:
        argv += ["--profile_scheduler", scheduler]
    board = program.TensorBoard()
    board.configure(argv=argv)
    url = board.launch()
    print(f"tb-profile: serving {logdir}; hosts are analysed on the {executors.describe()}\n"
          f"Open {url}#profile  (Ctrl-C to stop)", flush=True)
    try:
        import time

        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tb-profile", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="serve the bundled demo profiles in TensorBoard")
    demo.add_argument("--port", type=int, default=6006)
    demo.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve = commands.add_parser("serve", help="TensorBoard with the Profile tab on LOGDIR")
    serve.add_argument("logdir")
    serve.add_argument("--port", type=int, default=6006)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    from tb_profile_plugin.commands.profiles import add_scheduler_argument

    add_scheduler_argument(serve)
    for name, module_name in COMMAND_MODULES.items():
        module = importlib.import_module(module_name)
        module.add_arguments(commands.add_parser(name, help=module.HELP))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except BrokenPipeError:  # `tb-profile view ... | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "demo":
            return _tensorboard(str(DEMO_DIR), args.port, args.host)
        if args.command == "serve":
            if not os.path.isdir(args.logdir) and "://" not in args.logdir:
                print(f"tb-profile: {args.logdir} is not a directory", file=sys.stderr)
                return 3
            return _tensorboard(args.logdir, args.port, args.host, args.scheduler)
        if args.command in COMMAND_MODULES:
            return int(importlib.import_module(COMMAND_MODULES[args.command]).run(args))
    except ProfileError as exc:
        print(f"tb-profile: {exc}", file=sys.stderr)
        return exc.exit_code
    return 2


if __name__ == "__main__":
    sys.exit(main())
