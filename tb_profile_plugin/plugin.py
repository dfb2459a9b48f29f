"""The TensorBoard plugin: routes only. Parses requests, calls the layers below, responds.

Routes live under /data/plugin/profile/ (design/api.md). Every error is a `ProfileError`
mapped once, in `_respond_errors`, to its status and a JSON body `{"error": ...}`; anything
unexpected becomes a 500 with the same shape, is logged, and the server keeps serving.
"""

from __future__ import annotations

import functools
import logging
import mimetypes
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tensorboard.plugins import base_plugin
from werkzeug import Request, Response

from tb_profile_plugin import continuations, memory_release, metadata, request_budget
from tb_profile_plugin.analysis.hosts import executors, host_pool, host_progress
from tb_profile_plugin.analysis.hosts.host_facts import HostFacts
from tb_profile_plugin.document_cache import (
    DocumentCache,
    DocumentKey,
    Encoded,
    RecordingParams,
)
from tb_profile_plugin.errors import (
    BadRequest,
    CaptureBusy,
    CaptureDisabled,
    ClientGone,
    NotFound,
    ProfileError,
)
from tb_profile_plugin.fs import FOLLOW_LINKS_ENV
from tb_profile_plugin.json_text import json_bytes
from tb_profile_plugin.logdir import ALL_HOSTS, LogDir, Run, check_host_name, links_message
from tb_profile_plugin.tools import compare, csv_table, registry
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.store import ProfileStore, identify_profile

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"
#: The standalone page's policy: everything from this origin, nothing from anywhere else.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'self'; frame-ancestors 'self'"
)

Handler = Callable[[Request], Response]


def _respond(
    request: Request, body: bytes | str, content_type: str, status: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    """The one way responses leave the plugin: gzip when accepted, nosniff always."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    return _respond_encoded(request, Encoded.of(data, _accepts_gzip(request)), content_type,
                            status, headers)


def _accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("Accept-Encoding", "")


def _respond_encoded(
    request: Request, encoded: Encoded, content_type: str, status: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    """`_respond` for a body already encoded (a kept document, document_cache.py): the same
    bytes and headers as `_respond` gives for its JSON."""
    all_headers = {"X-Content-Type-Options": "nosniff", **(headers or {})}
    data = encoded.body
    if encoded.gzipped and _accepts_gzip(request):
        all_headers["Content-Encoding"] = "gzip"
    elif encoded.gzipped:
        data = encoded.plain()
    all_headers["Vary"] = "Accept-Encoding"
    return Response(data, status=status, content_type=content_type, headers=all_headers)


def _json(request: Request, value: Any, status: int = 200) -> Response:
    return _respond(request, json_bytes(value), "application/json", status)


def _refuse_cross_site(request: Request, listen_host: str | None = None) -> None:
    """Refuse a capture a browser sends on behalf of another site.

    A capture makes TensorBoard connect to the addresses a request names, so a page on any
    site must not be able to trigger one (an `<img>` or a form aimed at localhost). Browsers
    say where a request comes from (`Sec-Fetch-Site`, `Origin`); scripts and the CLI send
    neither and are not affected. A DNS-rebinding page (its name made to resolve to this
    machine) is same-origin for the browser, so the `Host` header must also name this
    TensorBoard: the address it listens on, or a localhost name (capture.request_host_allowed).
    """
    from tb_profile_plugin import capture

    host_header = request.headers.get("Host", "")
    if not capture.request_host_allowed(host_header, listen_host):
        raise CaptureDisabled(
            f"capture refused: this TensorBoard was reached as {host_header!r}, which is "
            "neither the address it listens on nor a localhost name (a DNS-rebinding page "
            "looks like this); open TensorBoard as http://localhost:PORT, or list the name in "
            f"{capture.ALLOWED_HOSTS_ENV}")
    fetch_site = request.headers.get("Sec-Fetch-Site", "")
    origin = request.headers.get("Origin", "")
    foreign_origin = bool(origin) and origin != "null" and (
        origin.split("://", 1)[-1].rstrip("/") != request.host)
    if fetch_site in ("cross-site", "same-site") or origin == "null" or foreign_origin:
        raise CaptureDisabled(
            "capture refused: the request came from another site "
            f"({origin or fetch_site}); open the Profile tab from this TensorBoard to capture")


def _respond_errors(handler: Handler, budgeted: bool = True) -> Handler:
    """`handler` with every error mapped to a JSON answer and, when `budgeted`, its work
    under the request's time budget and stopped when its client leaves (request_budget.py)."""

    def wrapped(request: Request) -> Response:
        started_s = time.monotonic()
        try:
            return answer(request)
        finally:  # a heavy request's freed memory goes back to the system, not into RSS
            memory_release.release_free_memory(time.monotonic() - started_s)

    def answer(request: Request) -> Response:
        try:
            if not budgeted:
                return handler(request)
            client = request.environ.get("werkzeug.socket")
            # An HTTP/1.1 client that half-closed is asked with an interim response whether it
            # is still there (request_budget.py); HTTP/1.0 has none, so only a reset stops it.
            probe = (request_budget.INTERIM_RESPONSE
                     if request.environ.get("SERVER_PROTOCOL") == "HTTP/1.1" else b"")
            with request_budget.bounded(request_budget.request_seconds(), client,
                                        f"the request for {request.full_path}", probe):
                return handler(request)
        except ClientGone as exc:
            logger.warning("%s", exc)
            return _json(request, {"error": str(exc)}, exc.http_status)
        except ProfileError as exc:
            return _json(request, {"error": str(exc)}, exc.http_status)
        except Exception as exc:  # the server stays up whatever a profile does
            logger.exception("internal error serving %s", request.full_path)
            return _json(
                request,
                {"error": f"internal error ({type(exc).__name__}: {exc}); see the TensorBoard log"},
                500,
            )

    wrapped.__name__ = handler.__name__
    return Request.application(wrapped)  # type: ignore[return-value]


class ProfilePlugin(base_plugin.TBPlugin):
    """The Profile tab."""

    plugin_name = metadata.PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        self._logdir = LogDir(context.logdir or "")
        self._store = ProfileStore()
        self._documents = DocumentCache()  # finished answers of the data route
        self._continuations = continuations.Continuations()  # documents building past a 503
        flags = getattr(context, "flags", None)
        self._capture_enabled = getattr(flags, metadata.CAPTURE_FLAG, "on") != "off"
        self._listen_host: str | None = getattr(flags, "host", None)
        self._capture_lock = threading.Lock()
        self._trackers = host_progress.RunTrackers()  # per-host progress of each run's requests
        scheduler = getattr(flags, metadata.SCHEDULER_FLAG, None)
        if scheduler:
            executors.configure(scheduler)
        logger.info("tb-profile: hosts of a run are analysed on the %s", executors.describe())

    # --- TensorBoard's plugin interface -------------------------------------------------

    def is_active(self) -> bool:
        """Cheap and non-blocking: the tab is offered whenever there is a logdir.

        The tab itself explains an empty logdir and offers Capture Profile, so no scan runs
        here (a walk of a large remote logdir would stall TensorBoard's plugin listing).
        """
        return bool(self._logdir.root)

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(
            es_module_path="/index.js", tab_name="Profile", disable_reload=True
        )

    def get_plugin_apps(self) -> dict[str, Handler]:
        apps: dict[str, Handler] = {
            "/runs": _respond_errors(self._serve_runs),
            "/links": _respond_errors(self._serve_links),
            "/run_tools": _respond_errors(self._tracked(self._serve_run_tools)),
            "/hosts": _respond_errors(self._tracked(self._serve_hosts)),
            "/data": _respond_errors(self._tracked(self._serve_data)),
            "/data_csv": _respond_errors(self._tracked(self._serve_data_csv)),
            "/progress": _respond_errors(self._serve_progress, budgeted=False),
            # A capture runs for the duration it was asked for, under its own deadlines.
            "/capture_profile": _respond_errors(self._serve_capture_profile, budgeted=False),
            "/compare": _respond_errors(self._serve_compare),
            "/trace_event": _respond_errors(self._serve_trace_event),
            "/trace_search": _respond_errors(self._serve_trace_search),
        }
        if STATIC_DIR.is_dir():
            for path in sorted(STATIC_DIR.iterdir()):
                if path.is_file():
                    apps["/" + path.name] = _respond_errors(self._static_handler(path))
        return apps

    # --- routes -------------------------------------------------------------------------

    def _serve_runs(self, request: Request) -> Response:
        return _json(request, [run.name for run in self._logdir.runs()])

    def _serve_links(self, request: Request) -> Response:
        """Links the logdir walk left out, so an empty run list can say why (docs/api.md)."""
        count = self._logdir.links_left_out()
        return _json(request, {"links_left_out": count, "follow_links_env": FOLLOW_LINKS_ENV,
                               "message": links_message(count)})

    def _serve_run_tools(self, request: Request) -> Response:
        run = self._logdir.run(request.args.get("run", ""))
        readable, unreadable = self._readable_facts(run)
        views = registry.views_for(registry.RunFacts.combine(readable))
        if unreadable and not readable:
            views = [registry.VIEWS["profile_info"].name]
        return _json(request, views)

    def _serve_hosts(self, request: Request) -> Response:
        """The hosts `data` answers for the view `tag` (every host file when no tag is given)."""
        run = self._logdir.run(request.args.get("run", ""))
        tag = request.args.get("tag", "")
        if not tag:
            return _json(request, list(run.hosts))
        return _json(request, self._hosts_offering(run, self._view(tag)))

    def _serve_progress(self, request: Request) -> Response:
        """Hosts done / total of the newest request of `run` that reads several hosts
        (analysis/hosts/host_progress.py); before any, phase null and 0 / 0."""
        tracker = self._trackers.newest(request.args.get("run", ""))
        return _json(request, (tracker or host_progress.Tracker()).to_json())

    def _tracked(self, handler: Handler) -> Handler:
        """`handler` reporting its per-host progress under its run (the `progress` route)."""

        def tracked(request: Request) -> Response:
            with host_progress.tracking(self._trackers.start(request.args.get("run", ""))):
                return handler(request)

        tracked.__name__ = handler.__name__
        return tracked

    def _serve_data(self, request: Request) -> Response:
        """The view's document; a repeated request is answered from the finished, encoded
        document while the files it read are unchanged (document_cache.py). The key holds only
        the parameters the view read (`RecordingParams`)."""
        view, run, host = self._target(request)
        params = self._params(request)
        place = self._document_key(view, run, host)
        encoded = self._documents.find(place, params) if place is not None else None
        if encoded is None and place is not None:
            # Built on a thread that may outlive this request's budget (continuations.py), so
            # a 503 leaves the document building for the next ask.
            encoded = self._continuations.run(
                (place, tuple(sorted(params.items()))),
                lambda: self._build_data(view, run, host, params, place, True))
        elif encoded is None:
            encoded = self._build_data(view, run, host, params, place, _accepts_gzip(request))
        return _respond_encoded(request, encoded, "application/json")

    def _build_data(self, view: registry.View, run: Run, host: str, params: dict[str, str],
                    place: DocumentKey | None, gzipped: bool) -> Encoded:
        """The view's document, encoded (and kept when `place` is not None)."""
        recording = RecordingParams(params)
        document = registry.build_document(view, self._view_request_for(view, run, host,
                                                                        recording))
        # A kept document is gzipped once, for every later client that accepts gzip.
        encoded = Encoded.of(json_bytes(document), gzipped)
        # Kept only if no file changed while it was built (else it may mix the two).
        if place is not None and place == self._document_key(view, run, host):
            self._documents.keep(place, params, recording.reads(), encoded)
        return encoded

    def _serve_data_csv(self, request: Request) -> Response:
        view, view_request = self._view_request(request)
        table_name = request.args.get("table", "") or next(iter(view.tables), "")
        table = view.tables.get(table_name)
        if table is None:
            available = ", ".join(view.tables) or "none"
            raise NotFound(f"view {view.name} has no table {table_name!r} (tables: {available})")
        header, rows = table(registry.build_document(view, view_request))
        filename = f"{view.name}_{table_name}.csv"
        return _respond(
            request, csv_table.to_csv(header, rows), "text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{filename}"'},
        )

    def _serve_compare(self, request: Request) -> Response:
        sides = []
        for key in ("a", "b"):
            run = self._logdir.run(request.args.get(f"run_{key}", ""))
            host = request.args.get(f"host_{key}", "") or None
            if host and host != ALL_HOSTS:
                self._logdir.host_path(run, host)  # 400 for malformed text, 404 if absent
            files = {h: run.xplane_path(h) for h in run.hosts}
            sides.append(compare.Side(run.name, files, host))
        return _json(request, compare.compare(sides[0], sides[1], self._store.open))

    def _serve_capture_profile(self, request: Request) -> Response:
        """Capture running profiler servers into a new run (GET or POST form; capture.py)."""
        from tb_profile_plugin import capture

        if not self._capture_enabled:
            raise CaptureDisabled(
                f"capture is switched off in this TensorBoard (--{metadata.CAPTURE_FLAG}=off); "
                "capture from a terminal with: tb-profile capture HOST:PORT --logdir LOGDIR"
            )
        _refuse_cross_site(request, self._listen_host)
        params = request.values
        addresses = params.get("service_addr", "")
        capture.parse_addresses(addresses)  # 400 before anything else
        options = capture.CaptureOptions.from_params(params)
        run = params.get("run", "")
        self._logdir.check_writable(run)  # 400 if a link would lead the files out of the logdir
        if not self._capture_lock.acquire(blocking=False):
            raise CaptureBusy("another capture is running in this TensorBoard; wait for it to "
                              "finish and try again")
        try:
            result = capture.capture(addresses, self._logdir.root, options, run=run)
        finally:
            self._capture_lock.release()
        self._logdir.refresh()  # so the runs route lists the new run at once
        return _json(request, result.as_json())

    def _serve_trace_event(self, request: Request) -> Response:
        from tb_profile_plugin.tools import trace_viewer

        _, view_request = self._view_request(request, trace_viewer.NAME)
        return _json(request, trace_viewer.event(view_request))

    def _serve_trace_search(self, request: Request) -> Response:
        from tb_profile_plugin.tools import trace_viewer

        _, view_request = self._view_request(request, trace_viewer.NAME)
        return _json(request, trace_viewer.search_route(view_request))

    def _static_handler(self, path: Path) -> Handler:
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if path.suffix in (".js", ".mjs"):
            content_type = "text/javascript"
        headers = {"Content-Security-Policy": CONTENT_SECURITY_POLICY} if path.suffix == ".html" \
            else {}

        def serve_static(request: Request) -> Response:
            return _respond(request, path.read_bytes(), content_type, headers=headers)

        return serve_static

    # --- helpers ------------------------------------------------------------------------

    def _view_request(
        self, request: Request, tag: str | None = None
    ) -> tuple[registry.View, registry.ViewRequest]:
        view, run, host = self._target(request, tag)
        return view, self._view_request_for(view, run, host, self._params(request))

    @staticmethod
    def _params(request: Request) -> dict[str, str]:
        """The view's own query parameters."""
        return {k: v for k, v in request.args.items() if k not in ("run", "tag", "host")}

    def _target(
        self, request: Request, tag: str | None = None
    ) -> tuple[registry.View, Run, str]:
        """The view, run and host (a host name or ALL_HOSTS) a request names, checked."""
        tag = tag or request.args.get("tag", "")
        if not tag:
            raise BadRequest("the tag parameter (the view) is missing")
        view = self._view(tag)
        host = request.args.get("host", "")
        if host and host != ALL_HOSTS:
            check_host_name(host)  # malformed text is a 400 whatever the run
        run = self._logdir.run(request.args.get("run", ""))
        if not host:
            if len(run.hosts) != 1:
                raise BadRequest(
                    f"the host parameter is missing; run {run.name!r} has "
                    f"{', '.join(run.hosts)}"
                )
            host = run.hosts[0]
        if host == ALL_HOSTS:
            if not view.combines_hosts:
                raise BadRequest(
                    f"view {view.name} shows one host at a time, not {ALL_HOSTS}; the hosts "
                    f"that have it: {', '.join(self._hosts_offering(run, view)) or 'none'}")
        return view, run, host

    def _document_key(self, view: registry.View, run: Run, host: str) -> DocumentKey | None:
        """What the document of `view` for `host` depends on besides its parameters
        (document_cache.py; `params` left empty); None when it is not kept: the view's document
        depends on more than its files, or a file cannot be stat'ed (the request then answers
        as it would without the cache)."""
        if not view.keeps_documents:
            return None
        paths = ([run.xplane_path(h) for h in run.hosts] if host == ALL_HOSTS
                 else [self._logdir.host_path(run, host)])
        try:
            files = tuple((path, *identify_profile(path)) for path in paths)
        except ProfileError:
            return None
        return DocumentKey(view.name, view.version, run.name, host, (), files)

    def _view_request_for(
        self, view: registry.View, run: Run, host: str, params: Mapping[str, str]
    ) -> registry.ViewRequest:
        """What `view` builds its document of `host` in `run` from."""
        if host == ALL_HOSTS:
            paths = {h: run.xplane_path(h) for h in run.hosts}
            # Facts from the executor's workers; a view decodes only the hosts it reads.
            # An unreadable host is left out (named in the diagnostics); none readable: 422.
            paths, host_facts, left_out = registry.readable_only(
                paths, host_pool.facts_of_files(paths, self._store))
            profiles: Mapping[str, Profile] = registry.LazyProfiles(
                paths, functools.partial(self._store.open, stats_later=view.events_first))
        else:
            paths = {host: self._logdir.host_path(run, host)}
            profiles = {h: self._store.open(p, stats_later=view.events_first)
                        for h, p in paths.items()}
            host_facts = {h: registry.as_facts(p) for h, p in profiles.items()}
            left_out = {}
        if not view.available(registry.RunFacts.combine(host_facts)):
            raise NotFound(self._no_data_message(run, view, host))
        return registry.ViewRequest(run.name, host, profiles, params, paths, host_facts,
                                    left_out)

    @staticmethod
    def _view(tag: str) -> registry.View:
        view = registry.VIEWS.get(tag)
        if view is None:
            raise NotFound(f"unknown view {tag!r}; views: {', '.join(registry.VIEWS)}")
        return view

    def _hosts_offering(self, run: Run, view: registry.View) -> list[str]:
        readable, _ = self._readable_facts(run)
        return registry.hosts_offering(view, run.hosts, readable)

    def _no_data_message(self, run: Run, view: registry.View, host: str) -> str:
        """Why `view` has no document for `host`, and which hosts (or views) have one."""
        offered = self._hosts_offering(run, view)
        where = (f"the hosts that have it: {', '.join(offered)}" if offered else
                 "no host of this run has it; the run's views: "
                 + ", ".join(registry.views_for(registry.RunFacts.combine(
                     self._readable_facts(run)[0]))))
        return f"view {view.name} has no data for run {run.name!r} host {host!r}; {where}"

    def _readable_facts(self, run: Run) -> tuple[dict[str, HostFacts], list[str]]:
        """The facts of the run's readable hosts, and the unreadable hosts. Several hosts'
        facts come from the executor's workers (analysis/hosts/host_pool.py): the server does not
        decode them."""
        paths = {host: run.xplane_path(host) for host in run.hosts}
        facts = host_pool.facts_of_files(paths, self._store)
        readable = {h: f for h, f in facts.items() if f.readable}
        return readable, [h for h in run.hosts if h not in readable]
