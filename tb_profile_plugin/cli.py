"""The `tb-profile` command line: serve a logdir, run the demo, print a view's document.

    tb-profile demo [--port P]                 TensorBoard on the bundled demo profiles
    tb-profile serve LOGDIR [--port P]         TensorBoard with this plugin on LOGDIR
    tb-profile view PATH VIEW [--host H]       a view's JSON document (PATH: logdir, run
                                               directory or .xplane.pb)

Exit codes: 0 success, 2 usage error, 3 no profile found, 4 unreadable profile.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from tb_profile_plugin.errors import NotFound, ProfileError
from tb_profile_plugin.logdir import ALL_HOSTS, XPLANE_SUFFIX, LogDir
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.store import ProfileStore

DEMO_DIR = Path(__file__).resolve().parent / "demo"

#: Subcommands that live in their own modules, in the order `--help` lists them: command name
#: -> module. Each module defines `HELP: str`, `add_arguments(parser)` and `run(args) -> int`
#: (returning an exit code; raising `ProfileError` is turned into its message and exit code).
COMMAND_MODULES: dict[str, str] = {
}


def _tensorboard(logdir: str, port: int, host: str) -> int:
    from tensorboard import program

    board = program.TensorBoard()
    board.configure(argv=[sys.argv[0], "--logdir", logdir, "--port", str(port), "--host", host])
    url = board.launch()
    print(f"tb-profile: serving {logdir}\nOpen {url}#profile  (Ctrl-C to stop)", flush=True)
    try:
        import time

        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


def _profiles_for(path: str, host: str | None) -> tuple[str, dict[str, str]]:
    """(run name, {host: xplane path}) for a logdir, a run directory or one .xplane.pb."""
    target = Path(path)
    if target.is_file() and target.name.endswith(XPLANE_SUFFIX):
        stem = target.name[: -len(XPLANE_SUFFIX)]
        return target.parent.name, {stem: str(target)}
    if not target.is_dir():
        raise NotFound(f"{path} is neither a directory nor an .xplane.pb file")
    direct = sorted(target.glob("*" + XPLANE_SUFFIX))
    if direct:
        files = {p.name[: -len(XPLANE_SUFFIX)]: str(p) for p in direct}
        run_name = target.name
    else:
        runs = LogDir(str(target)).runs()
        if not runs:
            raise NotFound(
                f"no profile under {path}: looked for plugins/profile/<session>/<host>"
                f"{XPLANE_SUFFIX} at any depth; capture one with the Keras TensorBoard callback "
                "(profile_batch=...) or tf.profiler.experimental.start/stop"
            )
        run = runs[0]
        files = {h: run.xplane_path(h) for h in run.hosts}
        run_name = run.name
    if host and host != ALL_HOSTS:
        if host not in files:
            raise NotFound(f"no host {host!r} in {path}; hosts: {', '.join(files)}")
        files = {host: files[host]}
    return run_name, files


def _view(path: str, view_name: str, host: str | None) -> int:
    view = registry.VIEWS.get(view_name)
    if view is None:
        print(f"tb-profile: unknown view {view_name!r}; views: {', '.join(registry.VIEWS)}",
              file=sys.stderr)
        return 2
    run_name, files = _profiles_for(path, host)
    if len(files) > 1 and not view.combines_hosts and not host:
        print(f"tb-profile: {view_name} shows one host; choose one with --host "
              f"({', '.join(files)})", file=sys.stderr)
        return 2
    store = ProfileStore()
    profiles = {h: store.open(p) for h, p in files.items()}
    shown_host = host or (next(iter(files)) if len(files) == 1 else ALL_HOSTS)
    doc = view.build(registry.ViewRequest(run_name, shown_host, profiles, {}))
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
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
    view = commands.add_parser("view", help="print one view's JSON document")
    view.add_argument("path", help="a logdir, a run directory or an .xplane.pb")
    view.add_argument("view", help="view name, e.g. profile_info")
    view.add_argument("--host", default=None)
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
            return _tensorboard(args.logdir, args.port, args.host)
        if args.command == "view":
            return _view(args.path, args.view, args.host)
        if args.command in COMMAND_MODULES:
            return int(importlib.import_module(COMMAND_MODULES[args.command]).run(args))
    except ProfileError as exc:
        print(f"tb-profile: {exc}", file=sys.stderr)
        return exc.exit_code
    return 2


if __name__ == "__main__":
    sys.exit(main())
