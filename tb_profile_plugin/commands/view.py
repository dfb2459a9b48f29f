"""`tb-profile view PATH VIEW [--host H] [--json|--csv] [--table T] [--param K=V]`.

Prints one view's document as JSON (the default; exactly what the `data` route serves), or one
of its tables as CSV (`--csv`, the `data_csv` route's text; `--table` picks the table, else the
view's first). A view that shows one host at a time needs `--host` on a several-host run;
views that combine hosts get ALL_HOSTS.
"""

from __future__ import annotations

import argparse
import sys

from tb_profile_plugin.commands.output import to_csv, to_json
from tb_profile_plugin.commands.profiles import (
    add_scheduler_argument,
    locate,
    use_scheduler,
    view_request,
)
from tb_profile_plugin.commands.progress import Progress
from tb_profile_plugin.errors import BadRequest, NotFound
from tb_profile_plugin.tools import registry

HELP = "print one view's JSON document, or one of its tables as CSV"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a logdir (its newest run), a run directory or an .xplane.pb")
    parser.add_argument("view", help=f"view name: {', '.join(registry.VIEWS)}")
    parser.add_argument("--host", default=None)
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="the view's document (default)")
    form.add_argument("--csv", action="store_true", help="one of the view's tables as CSV")
    parser.add_argument("--table", default="", help="with --csv: which table (default: first)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a view parameter of the data route, e.g. include_idle=false")
    add_scheduler_argument(parser)


def run(args: argparse.Namespace) -> int:
    use_scheduler(args)
    view = registry.VIEWS.get(args.view)
    if view is None:
        raise BadRequest(f"unknown view {args.view!r}; views: {', '.join(registry.VIEWS)}")
    params = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadRequest(f"--param takes KEY=VALUE, not {item!r}")
        params[key] = value
    table = None
    if args.csv:
        table_name = args.table or next(iter(view.tables), "")
        table = view.tables.get(table_name)
        if table is None:
            raise BadRequest(f"view {view.name} has no table {table_name!r} "
                             f"(tables: {', '.join(view.tables) or 'none'})")
    located = locate(args.path, args.host)
    if len(located.files) > 1 and not view.combines_hosts:
        raise BadRequest(f"{view.name} shows one host at a time; choose one with --host "
                         f"({', '.join(located.files)})")
    with Progress(len(located.files) + 1, located.size_bytes()) as progress:
        request = view_request(located, args.host, params, progress)
        facts = request.run_facts()
        if not view.available(facts):
            raise NotFound(f"view {view.name} has no data for {args.path} (host {request.host}); "
                           f"views with data: {', '.join(registry.views_for(facts))}")
        progress.stage(f"building {view.name}")
        doc = registry.build_document(view, request)
    sys.stdout.write(to_csv(table(doc)) if table is not None else to_json(doc) + "\n")
    return 0
