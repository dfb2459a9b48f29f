"""Capture Profile: ask running profiler servers for a trace and save it as a new run.

A program that called `tf.profiler.experimental.server.start(port)` serves TensorFlow's
`ProfilerService` over gRPC. `capture()` sends every address one `ProfileRequest` at the same
time (one thread each), with `ProfileOptions` fully set (tracer levels, delay, duration), and
writes each answer to

    <logdir>/[<run>/]plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>_<port>.xplane.pb

named as TensorFlow's own client names them (the address with ':' made '_'), plus a tfevents
marker in `<logdir>/[<run>/]` so TensorBoard lists the run. TensorFlow 2.21's own
`client.trace` drops the tracer options; this client sends them, so the Python tracer works.

The request asks the server to return the XSpace in its answer (`emit_xspace`), so the profile
reaches the logdir even when the server runs on another machine; servers that predate that
field save it under `repository_root` themselves, which works when they share the logdir.

Retries follow the reference: when no address returned any trace (an empty trace, or a
transient gRPC failure), the whole capture runs again, up to `num_retry` more times. Each RPC
has a deadline of delay + duration + a margin. Every failure becomes one sentence saying what
happened and what to do; nothing here imports TensorFlow.

Limits: an answer larger than `TB_PROFILE_CAPTURE_MAX_BYTES` (default 1 GiB; `--max-bytes` on
the command line) is refused by gRPC from its declared length, before it is buffered, and the
failure names the limit. A capture that fails leaves nothing behind: the directories it
created (session, `plugins/profile`, the run, the logdir itself) are removed again, and a
trace file that could not be written completely is deleted.

`request_host_allowed` is the capture route's defence against DNS rebinding: a page on
`rebind.evil.example` whose name later resolves to 127.0.0.1 is "same-origin" for the browser,
but its requests carry `Host: rebind.evil.example`; only the address TensorBoard listens on,
localhost names, IP literals, this machine's own names and `TB_PROFILE_CAPTURE_HOSTS` may
capture.
"""

from __future__ import annotations

import concurrent.futures
import functools
import ipaddress
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from tb_profile_plugin import fs
from tb_profile_plugin.errors import BadRequest, CaptureFailed, CaptureTimedOut
from tb_profile_plugin.logdir import PLUGIN_SUBDIR, XPLANE_SUFFIX, check_name

#: The method TensorFlow's profiler server registers (package `tensorflow`, not ours).
PROFILE_METHOD = "/tensorflow.ProfilerService/Profile"
#: What TensorFlow's client asks for; servers other than TPU ones only honour xplane.pb.
REQUESTED_TOOLS = (
    "trace_viewer", "op_profile", "input_pipeline", "kernel_stats", "memory_viewer",
    "memory_profile", "overview_page", "pod_viewer", "tensorflow_stats", "xplane.pb",
)
MAX_EVENTS = 1_000_000
MAX_ADDRESSES = 64
MAX_DURATION_MS = 10 * 60 * 1000
MAX_DELAY_MS = 10 * 60 * 1000
MAX_RETRY = 10
#: Added to delay + duration for each RPC's deadline: time to stop tracers and send the trace.
MIN_DEADLINE_MARGIN_MS = 20_000
#: The largest trace (XSpace) a capture accepts, in bytes; environment variable and default.
MAX_XSPACE_BYTES_ENV = "TB_PROFILE_CAPTURE_MAX_BYTES"
DEFAULT_MAX_XSPACE_BYTES = 2**30
#: gRPC caps one message at 2 GiB - 1; room is left for the answer's other fields.
_GRPC_MESSAGE_LIMIT = 2**31 - 1
_ANSWER_OVERHEAD_BYTES = 2**20
#: Host names (besides localhost names and IP literals) allowed to send captures, comma-separated;
#: `*` allows any (behind a proxy that checks who asks).
ALLOWED_HOSTS_ENV = "TB_PROFILE_CAPTURE_HOSTS"
_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
_SESSION_FORMAT = "%Y_%m_%d_%H_%M_%S"
_ADDRESS = re.compile(
    r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?):(?P<port>\d{1,5})$"
)


@dataclass(frozen=True)
class CaptureOptions:
    """What to ask each profiler server for (the Capture Profile dialog's fields)."""

    duration_ms: int = 2000
    num_retry: int = 3
    #: 0 off, 1 critical (TraceMe level 1: steps, ops), 2 info, 3 verbose.
    host_tracer_level: int = 2
    #: 0 off, 1 on (GPU/TPU activity).
    device_tracer_level: int = 1
    #: 0 off, 1 on: every Python function call becomes an event named `$file:line function`.
    python_tracer_level: int = 0
    delay_ms: int = 0
    max_events: int = MAX_EVENTS
    #: Added to delay + duration for each RPC's deadline; None: max(20 s, duration).
    deadline_margin_ms: int | None = None
    #: The largest trace accepted from one server; None: $TB_PROFILE_CAPTURE_MAX_BYTES or 1 GiB.
    max_xspace_bytes: int | None = None

    def __post_init__(self) -> None:
        _check_range("duration", self.duration_ms, 1, MAX_DURATION_MS, " ms")
        _check_range("num_retry", self.num_retry, 0, MAX_RETRY)
        _check_range("host_tracer_level", self.host_tracer_level, 0, 3)
        _check_range("device_tracer_level", self.device_tracer_level, 0, 1)
        _check_range("python_tracer_level", self.python_tracer_level, 0, 1)
        _check_range("delay", self.delay_ms, 0, MAX_DELAY_MS, " ms")
        _check_range("max_events", self.max_events, 1, 10**9)
        if self.max_xspace_bytes is not None:
            _check_range("max_xspace_bytes", self.max_xspace_bytes, 1,
                         _GRPC_MESSAGE_LIMIT - _ANSWER_OVERHEAD_BYTES, " bytes")

    @property
    def xspace_limit_bytes(self) -> int:
        """`max_xspace_bytes`, else $TB_PROFILE_CAPTURE_MAX_BYTES, else 1 GiB."""
        if self.max_xspace_bytes is not None:
            return self.max_xspace_bytes
        text = os.environ.get(MAX_XSPACE_BYTES_ENV, "").strip()
        if not text:
            return DEFAULT_MAX_XSPACE_BYTES
        high = _GRPC_MESSAGE_LIMIT - _ANSWER_OVERHEAD_BYTES
        if not text.isdigit() or not 1 <= int(text) <= high:
            raise BadRequest(f"{MAX_XSPACE_BYTES_ENV}={text!r} must be a whole number of bytes "
                             f"from 1 to {high}")
        return int(text)

    @property
    def deadline_s(self) -> float:
        """Each RPC's deadline: delay + duration + margin (default max(20 s, duration))."""
        margin_ms = self.deadline_margin_ms
        if margin_ms is None:
            margin_ms = max(MIN_DEADLINE_MARGIN_MS, self.duration_ms)
        return (self.delay_ms + self.duration_ms + margin_ms) / 1000.0

    @staticmethod
    def from_params(params: Mapping[str, str]) -> CaptureOptions:
        """From the route's parameters (design/api.md names; all optional but the address)."""
        defaults = CaptureOptions()
        return CaptureOptions(
            duration_ms=_int_param(params, "duration", defaults.duration_ms),
            num_retry=_int_param(params, "num_retry", defaults.num_retry),
            host_tracer_level=_int_param(params, "host_tracer_level", defaults.host_tracer_level),
            device_tracer_level=_int_param(
                params, "device_tracer_level", defaults.device_tracer_level),
            python_tracer_level=_int_param(
                params, "python_tracer_level", defaults.python_tracer_level),
            delay_ms=_int_param(params, "delay", defaults.delay_ms),
        )


@dataclass(frozen=True)
class CaptureResult:
    """A finished capture: the new run and what each address did."""

    run: str
    directory: str
    hosts: tuple[str, ...]
    attempts: int
    duration_ms: int
    #: One sentence per address that returned nothing (the others made the run).
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def message(self) -> str:
        hosts = ", ".join(self.hosts)
        noun = "host" if len(self.hosts) == 1 else "hosts"
        text = (
            f"Captured {self.duration_ms} ms from {len(self.hosts)} {noun} ({hosts}) into run "
            f"{self.run}"
        )
        if self.attempts > 1:
            text += f" after {self.attempts} attempts"
        return text + "." + "".join(" " + w for w in self.warnings)

    def as_json(self) -> dict[str, object]:
        return {
            "result": self.message, "run": self.run, "hosts": list(self.hosts),
            "attempts": self.attempts, "warnings": list(self.warnings),
        }


# --- addresses ---------------------------------------------------------------------------


def parse_addresses(text: str) -> list[str]:
    """`host:port` entries of a comma-separated list; a `grpc://` prefix is allowed."""
    entries = [entry.strip() for entry in (text or "").split(",")]
    entries = [entry for entry in entries if entry]
    if not entries:
        raise BadRequest(
            "the service_addr parameter is missing: give the profiler server's host:port, "
            "e.g. localhost:6009 (the port the program passed to "
            "tf.profiler.experimental.server.start)"
        )
    if len(entries) > MAX_ADDRESSES:
        raise BadRequest(f"{len(entries)} addresses given; at most {MAX_ADDRESSES} at once")
    addresses: list[str] = []
    for entry in entries:
        address = entry[len("grpc://"):] if entry.lower().startswith("grpc://") else entry
        match = _ADDRESS.match(address)
        if match is None or not 0 < int(match.group("port")) < 65536:
            raise BadRequest(
                f"address {entry!r} is not host:port (for example localhost:6009 or "
                "grpc://10.0.0.2:6009; IPv6 as [::1]:6009)"
            )
        if address in addresses:
            raise BadRequest(f"address {address!r} is listed twice")
        addresses.append(address)
    return addresses


def host_file_stem(address: str) -> str:
    """The file stem TensorFlow's client uses for an address: ':' made '_' (127.0.0.1_6009)."""
    return address.replace(":", "_")


# --- the capture -------------------------------------------------------------------------


class _Outcome:
    """What one address answered in one attempt."""

    def __init__(self, address: str, xspace: bytes | None = None, saved_by_server: bool = False,
                 error: str | None = None, retryable: bool = False,
                 timed_out: bool = False) -> None:
        self.address = address
        self.xspace = xspace
        self.saved_by_server = saved_by_server
        self.error = error
        self.retryable = retryable
        self.timed_out = timed_out

    @property
    def has_trace(self) -> bool:
        return self.xspace is not None or self.saved_by_server


def capture(
    service_addr: str, logdir: str, options: CaptureOptions | None = None, run: str = "",
) -> CaptureResult:
    """Capture every address in `service_addr` at once into one new session of `logdir`."""
    options = options or CaptureOptions()
    addresses = parse_addresses(service_addr)
    if not logdir:
        raise BadRequest("no logdir to save the capture in")
    if run:
        check_name(run, "run")
    try:
        import grpc  # noqa: F401  (a dependency; imported here so TensorBoard starts fast)
    except ImportError as exc:  # pragma: no cover - grpcio is a declared dependency
        raise CaptureFailed(f"Capture needs the grpcio package: pip install grpcio ({exc})") \
            from exc
    _ = options.xspace_limit_bytes  # a malformed limit fails before anything is made
    run_dir = fs.join(logdir, *run.split("/")) if run else logdir
    root = fs.join(run_dir, *PLUGIN_SUBDIR)
    created = _missing_dirs(root, logdir)
    session = _new_session_id(root)
    session_dir = fs.join(root, session)
    written: list[str] = []
    succeeded = False
    try:
        attempts = 0
        outcomes: list[_Outcome] = []
        while attempts <= options.num_retry:
            attempts += 1
            outcomes = _capture_once(addresses, options, root, session)
            if any(o.has_trace for o in outcomes):
                break
            if not any(o.retryable for o in outcomes):
                break
        traced = [o for o in outcomes if o.has_trace]
        failed = [o for o in outcomes if not o.has_trace]
        if not traced:
            message = " ".join(o.error or "" for o in failed)
            if attempts > 1:
                message += f" ({attempts} attempts)"
            if all(o.timed_out for o in failed):
                raise CaptureTimedOut(message)
            raise CaptureFailed(message)
        hosts: list[str] = []
        try:
            for outcome in traced:
                stem = host_file_stem(outcome.address)
                if outcome.xspace is not None:
                    path = fs.join(session_dir, stem + XPLANE_SUFFIX)
                    written.append(path)
                    fs.write_bytes(path, outcome.xspace)
                hosts.append(stem)
            _write_tfevents_marker(run_dir)
        except OSError as exc:
            raise CaptureFailed(f"the trace could not be saved in {session_dir}: {exc}; check "
                                "the free space and the permissions of the logdir") from exc
        succeeded = True
    finally:
        if not succeeded:
            _remove_partial(written, [session_dir, *created])
    run_name = f"{run}/{session}" if run else session
    return CaptureResult(
        run=run_name, directory=session_dir, hosts=tuple(hosts), attempts=attempts,
        duration_ms=options.duration_ms, warnings=tuple(o.error or "" for o in failed),
    )


def _capture_once(
    addresses: list[str], options: CaptureOptions, root: str, session: str,
) -> list[_Outcome]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(addresses)) as pool:
        futures = [
            pool.submit(_profile_one, address, options, root, session) for address in addresses
        ]
        return [future.result() for future in futures]


def _profile_request(address: str, options: CaptureOptions, root: str, session: str) -> object:
    from tb_profile_plugin.xspace.pb import profiler_options_pb2, profiler_service_pb2

    opts = profiler_options_pb2.ProfileOptions(
        version=1,
        include_dataset_ops=True,
        host_tracer_level=options.host_tracer_level,
        device_tracer_level=options.device_tracer_level,
        python_tracer_level=options.python_tracer_level,
        duration_ms=options.duration_ms,
        start_timestamp_ns=(time.time_ns() + options.delay_ms * 1_000_000)
        if options.delay_ms else 0,
        session_id=session,
    )
    return profiler_service_pb2.ProfileRequest(
        duration_ms=options.duration_ms,
        max_events=options.max_events,
        tools=list(REQUESTED_TOOLS),
        opts=opts,
        repository_root=root,
        session_id=session,
        host_name=address,
        emit_xspace=True,
    )


def _profile_one(address: str, options: CaptureOptions, root: str, session: str) -> _Outcome:
    import grpc

    from tb_profile_plugin.xspace.pb import profiler_service_pb2

    request = _profile_request(address, options, root, session)
    limit = options.xspace_limit_bytes
    channel_options = [
        # gRPC refuses a larger answer from its declared length, before buffering it.
        ("grpc.max_receive_message_length",
         min(limit + _ANSWER_OVERHEAD_BYTES, _GRPC_MESSAGE_LIMIT)),
        ("grpc.max_send_message_length", -1),
    ]
    try:
        with grpc.insecure_channel(address, options=channel_options) as channel:
            call = channel.unary_unary(
                PROFILE_METHOD,
                request_serializer=lambda message: message.SerializeToString(),
                response_deserializer=profiler_service_pb2.ProfileResponse.FromString,
            )
            response = call(request, timeout=options.deadline_s)
    except grpc.RpcError as exc:
        return _rpc_failure(address, options, exc)
    xspace = bytes(response.xspace)
    if not xspace:
        # Old servers put the XSpace in tool data named xplane.pb.
        xspace = next((bytes(t.data) for t in response.tool_data if t.name == "xplane.pb"), b"")
    if len(xspace) > limit:
        return _Outcome(address, error=_too_large(address, limit, len(xspace)))
    if response.empty_trace or (not xspace and not _saved_by_server(root, session, address)):
        if response.empty_trace:
            error = (
                f"{address} returned an empty trace: nothing ran in the program during the "
                f"{options.duration_ms} ms capture; capture while it trains, or for longer."
            )
        else:
            error = (
                f"{address} saved its trace on its own file system under {root}, which this "
                "TensorBoard cannot see; give it a logdir both can reach (e.g. gs://...)."
            )
        return _Outcome(address, error=error, retryable=bool(response.empty_trace))
    if xspace:
        return _Outcome(address, xspace=xspace)
    return _Outcome(address, saved_by_server=True)


def _saved_by_server(root: str, session: str, address: str) -> bool:
    path = fs.join(root, session, host_file_stem(address) + XPLANE_SUFFIX)
    try:
        fs.stat(path)
    except FileNotFoundError:
        return False
    return True


def _rpc_failure(address: str, options: CaptureOptions, exc: object) -> _Outcome:
    import grpc

    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = (exc.details() if isinstance(exc, grpc.Call) else str(exc)) or ""
    lowered = details.lower()
    hint = (
        "is the program running, and did it call "
        f"tf.profiler.experimental.server.start({address.rsplit(':', 1)[1]})?"
    )
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return _Outcome(
            address, timed_out=True,
            error=f"{address} did not answer within {options.deadline_s:.0f} s (delay + "
            f"duration + margin): the host is unreachable or the program is stalled; check "
            "the address and that the program is running.",
        )
    if code == grpc.StatusCode.UNAVAILABLE:
        if "refused" in lowered:
            return _Outcome(address, error=f"{address} refused the connection: {hint}")
        if any(word in lowered for word in ("dns", "resolv", "lookup", "name or service")):
            return _Outcome(address, error=f"{address}: the host name could not be resolved; "
                            "check the address.")
        return _Outcome(
            address, retryable=True,
            error=f"{address} could not be reached ({_short(details)}): {hint}",
        )
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in lowered:
        sizes = re.search(r"\((\d+) vs\. \d+\)", details)
        return _Outcome(address, error=_too_large(
            address, options.xspace_limit_bytes, int(sizes.group(1)) if sizes else None))
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return _Outcome(address, error=f"{address} is not a TensorFlow profiler server (it does "
                        "not serve ProfilerService.Profile); check the port.")
    if code == grpc.StatusCode.ALREADY_EXISTS or (
        code == grpc.StatusCode.UNKNOWN and details == "Stream removed"
    ):
        return _Outcome(address, retryable=True,
                        error=f"{address} is busy ({_short(details)}); try again.")
    if "another profil" in lowered:
        return _Outcome(address, error=f"{address} is already being profiled (another capture "
                        "or tf.profiler.experimental.start is active); try again when it ends.")
    name = code.name if code is not None else type(exc).__name__
    return _Outcome(address, error=f"{address} answered {name}: {_short(details)}.")


def _too_large(address: str, limit: int, size: int | None) -> str:
    sent = f" ({_mib(size)})" if size is not None else ""
    return (f"{address} sent a trace larger than the capture limit of {_mib(limit)}{sent}; "
            "nothing was saved. Capture for a shorter time or fewer events (max_events), or "
            f"raise the limit with {MAX_XSPACE_BYTES_ENV} (bytes) or tb-profile capture "
            "--max-bytes.")


def _mib(num_bytes: int) -> str:
    return f"{num_bytes / 2**20:,.1f} MiB"


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- files -------------------------------------------------------------------------------

_session_lock = threading.Lock()


def _new_session_id(root: str) -> str:
    """The local time as TensorFlow names sessions; `_2`, `_3`... if that directory exists."""
    with _session_lock:
        base = time.strftime(_SESSION_FORMAT, time.localtime())
        session, n = base, 1
        while fs.isdir(fs.join(root, session)):
            n += 1
            session = f"{base}_{n}"
        fs.makedirs(fs.join(root, session))
        return session


def _missing_dirs(path: str, logdir: str) -> list[str]:
    """`path` and its parents up to `logdir` (included) that do not exist yet, deepest first:
    what a failed capture must remove again."""
    missing: list[str] = []
    current = path
    while not fs.isdir(current):
        missing.append(current)
        if os.path.normpath(current) == os.path.normpath(logdir) or fs.is_remote(current):
            break
        parent = os.path.dirname(current.rstrip("/"))
        if not parent or parent == current:
            break
        current = parent
    return missing


def _remove_partial(files: list[str], dirs: list[str]) -> None:
    """Removes a failed capture's files, then its directories, deepest first, each only while
    it is empty (a concurrent capture's content stays)."""
    for path in files:
        if not fs.is_remote(path):
            for name in (path, path + ".partial"):
                try:
                    os.unlink(name)
                except OSError:
                    pass
    for path in dirs:
        if not fs.is_remote(path):
            try:
                os.rmdir(path)
            except OSError:
                pass


# --- who may capture ---------------------------------------------------------------------


def request_host_allowed(host_header: str, listen_host: str | None = None) -> bool:
    """Whether a capture request's `Host` header names this TensorBoard (DNS rebinding).

    Allowed: no Host header (not a browser); an IP literal (a rebinding page needs a name: a
    browser that sends an IP's Host loaded the page from that IP, i.e. from TensorBoard);
    localhost names (`localhost`, `*.localhost`); the address TensorBoard listens on
    (`--host`); this machine's host name and fully qualified name; the names listed in
    $TB_PROFILE_CAPTURE_HOSTS (`*`: any).
    """
    name = _host_name(host_header)
    if name is None:
        return not host_header.strip()
    if not name:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return True
    allowed = {n.strip().lower().rstrip(".") for n in
               os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if n.strip()}
    if "*" in allowed or name in allowed:
        return True
    if listen_host and name == listen_host.strip().lower().rstrip("."):
        return True
    return name in _machine_names()


def _host_name(host_header: str) -> str | None:
    """The lower-case name in a Host header (port and IPv6 brackets removed); None when it is
    malformed."""
    text = host_header.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or (text[end + 1:] and not re.fullmatch(r":\d{1,5}", text[end + 1:])):
            return None
        return text[1:end]
    name, _, port = text.partition(":")
    if port and not port.isdigit():
        return None
    if not re.fullmatch(r"[a-z0-9._-]*", name):
        return None
    return name.rstrip(".")


@functools.lru_cache(maxsize=1)
def _machine_names() -> frozenset[str]:
    names = {socket.gethostname()}
    try:
        names.add(socket.getfqdn())
    except OSError:
        pass
    return frozenset(n.lower().rstrip(".") for n in names if n)


def _write_tfevents_marker(run_dir: str) -> None:
    """An events file holding only the file version, so TensorBoard lists `run_dir` as a run.

    Written once per directory: nothing is added where an events file already exists.
    """
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    if any("tfevents" in name for name in fs.listdir(run_dir)):
        return
    wall_time = time.time()
    data = event_pb2.Event(wall_time=wall_time, file_version="brain.Event:2").SerializeToString()
    header = struct.pack("<Q", len(data))
    record = (header + struct.pack("<I", masked_crc32c(header)) + data
              + struct.pack("<I", masked_crc32c(data)))
    name = (f"events.out.tfevents.{int(wall_time):010d}.{socket.gethostname()}."
            f"{os.getpid()}.profile_capture.v2")
    fs.write_bytes(fs.join(run_dir, name), record)


# --- parameters --------------------------------------------------------------------------


def _check_range(name: str, value: int, low: int, high: int, unit: str = "") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise BadRequest(f"{name} must be a whole number from {low} to {high}{unit}, not {value!r}")


def _int_param(params: Mapping[str, str], name: str, default: int) -> int:
    text = (params.get(name) or "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, not {text!r}") from None
