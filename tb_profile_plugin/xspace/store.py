"""Open profiles by path: memory cache (LRU, bounded in bytes), then disk cache, then decode.

`ProfileStore.open(path)` is safe to call from many request threads at once: concurrent
requests for one cold profile wait for a single decode (one lock per file), and a profile whose
identity changed on disk (`fs.identity`: size, mtime, inode, ctime, content fingerprint; so
also a same-size rewrite whose mtime was restored) is decoded again; the disk cache's key holds
the same identity (`disk_key`), so a restart does not bring the old version back either. The
memory bound is `TB_PROFILE_MEMORY_CACHE_BYTES` (default 2 GiB), or the `max_bytes` given, over
each profile's columns **and everything derived from it** (analyses, forest, trace index:
`Profile.derived`, measured again whenever the profile is served); the least recently used
profiles are dropped first, with their derived results (a profile bigger than the bound is
served but not kept).

A decode under a request's budget runs on a thread of its own and finishes whatever the
request does (request_budget.py): the request waits for it at its checkpoints, and one that
stops (503, or its client gone) leaves the decode running into the store, so asking again
finds it decoded (or still decoding, and waits for the same one). A file that cannot be
decoded is remembered under its identity (`FAILURES_KEPT`, least recently used dropped): the
same file, by any path (two links to it), is refused again without being read; any change to
it (a rewrite, a chmod: its ctime) reads it again.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tb_profile_plugin import fs, request_budget
from tb_profile_plugin.errors import NotFound, UnreadableProfile
from tb_profile_plugin.xspace import cache, file_check
from tb_profile_plugin.xspace.cache import lazy as cache_lazy
from tb_profile_plugin.xspace.decode import (
    Outline,
    compiled_decoder_available,
    decode_xspace,
    outline_xspace,
)
from tb_profile_plugin.xspace.kineto import KINETO_FORMAT_VERSION, decode_kineto
from tb_profile_plugin.xspace.kineto import outline as kineto_outline
from tb_profile_plugin.xspace.kineto.read import GZIP_MAGIC, Source
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_file
from tb_profile_plugin.xspace.stats_later import CHANGED, Reopen
from tb_profile_plugin.xspace.stats_later import pending as stats_later_of

MEMORY_CACHE_ENV = "TB_PROFILE_MEMORY_CACHE_BYTES"
DEFAULT_MEMORY_CACHE_BYTES = 2 * 2**30
#: How many files that could not be decoded are remembered (their identity and a sentence).
FAILURES_KEPT = 1024
_FAILURE_TEXT_CHARS = 2000


@dataclass(frozen=True)
class _Entry:
    profile: Profile
    identity: fs.Identity


class _Job:
    """One decode of one file as it is (`identity`), waited for by every request that asks."""

    def __init__(self, identity: fs.Identity) -> None:
        self.identity = identity
        self.done = threading.Event()
        self.profile: Profile | None = None
        self.error: BaseException | None = None

    def result(self) -> Profile:
        request_budget.wait(self.done)
        if self.error is not None:
            error = self.error
            # A fresh exception per waiter: the kept one has no traceback holding the bytes.
            raise type(error)(str(error)) if isinstance(error, (NotFound, UnreadableProfile)) \
                else error
        assert self.profile is not None
        return self.profile


def _weight(profile: Profile) -> int:
    """What a kept profile costs: its columns and every result derived from it."""
    return profile.nbytes + profile.derived.nbytes


def stat_profile(path: str) -> tuple[int, int]:
    """(size in bytes, modification time in ns) of the profile file at `path`, checked before
    anything reads it: NotFound when absent; UnreadableProfile when it is not a regular file,
    is over the size limit (`fs.max_file_bytes`) or cannot be reached (a link loop). Messages
    name the file, never the server's directories."""
    try:
        size_bytes, mtime_ns = fs.stat(path)
        fs.check_size(size_bytes)
    except FileNotFoundError as exc:
        raise NotFound(_gone(path)) from exc
    except OSError as exc:
        raise UnreadableProfile(_unreadable(path, exc)) from exc
    return size_bytes, mtime_ns


def identify_profile(path: str) -> fs.Identity:
    """`fs.identity` of the profile file at `path`, with `stat_profile`'s checks and errors."""
    try:
        identity = fs.identity(path)
        fs.check_size(identity.size_bytes)
    except FileNotFoundError as exc:
        raise NotFound(_gone(path)) from exc
    except OSError as exc:
        raise UnreadableProfile(_unreadable(path, exc)) from exc
    return identity


def disk_key(path: str, identity: fs.Identity | None = None) -> str:
    """The disk cache's key of the profile file at `path` as it is now (or as `identity`)."""
    identity = identify_profile(path) if identity is None else identity
    # (a Kineto trace's key also names its decoder's format: docs/pytorch.md)
    kineto = f":kineto{KINETO_FORMAT_VERSION}" if is_kineto_file(path) else ""
    return cache.cache_key(path, identity.size_bytes, identity.mtime_ns,
                           f"{identity.inode}:{identity.ctime_ns}:{identity.fingerprint}{kineto}")


def decode_profile_bytes(path: str, data: bytes | Source,
                         stats_later: Reopen | None = None) -> Profile:
    """The file's bytes (or, a plain PyTorch trace, its open file: `open_profile`) decoded by
    the decoder its name asks for: a PyTorch trace (`*.pt.trace.json[.gz]`, xspace/kineto/)
    or an XSpace (`stats_later`: events first, `decode_xspace`)."""
    if is_kineto_file(path):
        return decode_kineto(data)
    assert isinstance(data, bytes | fs.LocalFile)  # (an XSpace: bytes, or ranges of a file)
    return decode_xspace(data, stats_later=stats_later)


def outline_profile(path: str, data: bytes | Source) -> Outline:
    """`outline_xspace` of an XSpace; a PyTorch trace has no cheaper outline than its decode,
    which is kept in the disk cache for the analysis that opens it next."""
    if not is_kineto_file(path):
        assert isinstance(data, bytes | fs.LocalFile)  # (an XSpace: bytes, or a file's ranges)
        return outline_xspace(data)
    profile = decode_kineto(data)
    cache.save_later(profile, disk_key(path), None)
    return kineto_outline.outline_of(profile)


class Undecodable(UnreadableProfile):
    """A file whose content is no profile (so remembered under its identity; not a failure to
    read it, which may pass)."""


def read_profile_bytes(path: str) -> bytes:
    """The whole profile file (`fs.read_bytes`' checks: a regular file within the size
    limit), or NotFound / UnreadableProfile naming the file, never the server's directories.
    A local file with holes, or an XSpace that does not start like one, is refused before it
    is read (xspace/file_check.py: Undecodable)."""
    _check_local(path)
    with _reading(path):
        return fs.read_bytes(path)


@contextlib.contextmanager
def open_profile(path: str, ranges: bool = False) -> Iterator[bytes | Source | fs.LocalFile]:
    """What the decoders read of the profile file at `path`, with `read_profile_bytes`' checks
    and errors: its bytes, except a local plain (not gzip) PyTorch trace, which is opened
    (`fs.LocalFile`: the same checks, before anything is read) and read a chunk at a time by
    the decoder (read.py), so the file is never held whole (docs/pytorch.md "Bounds"); with
    `ranges`, a local XSpace is opened too, and the decoder reads a plane and a line at a time
    (xspace/file_fields.py `RangeSource`). A reading error inside the `with` (an OSError) is
    NotFound / UnreadableProfile as there."""
    if fs.is_remote(path) or not (is_kineto_file(path) or ranges):
        yield read_profile_bytes(path)
        return
    _check_local(path)
    with _reading(path), fs.LocalFile(path) as local:
        if not is_kineto_file(path) or local.head(len(GZIP_MAGIC)) != GZIP_MAGIC:
            yield local
            return
        data = local.read_all()  # (a gzip PyTorch trace: small on disk, read whole)
    yield data


def _check_local(path: str) -> None:
    try:
        file_check.check_local(path)
    except UnreadableProfile as exc:
        raise Undecodable(str(exc)) from None


@contextlib.contextmanager
def _reading(path: str) -> Iterator[None]:
    """A reading error (OSError) as NotFound / UnreadableProfile naming the file only."""
    try:
        yield
    except FileNotFoundError as exc:
        raise NotFound(_gone(path)) from exc
    except OSError as exc:
        raise UnreadableProfile(_unreadable(path, exc)) from exc


def _gone(path: str) -> str:
    return (f"profile file {fs.basename(path)} does not exist (any more); reload the list of "
            "runs")


def _unreadable(path: str, exc: OSError) -> str:
    if isinstance(exc, fs.FileRefused):
        return f"{fs.basename(path)}: {exc}"
    reason = exc.strerror or type(exc).__name__
    return (f"{fs.basename(path)} cannot be read ({reason}); check the file and the links "
            "leading to it")


#: XSpace files from which `ProfileStore.open(stats_later=True)` leaves the lines' stats in the
#: file until first used (TB_PROFILE_STATS_LATER_MIN_BYTES). Below it the whole decode takes
#: little more than the events' (a 207 MB 2M-event 8-GPU capture: 0.12-0.15 s against
#: 0.26-0.31 s), and a GPU capture under a million events (trace/lines_first.py) has its whole
#: trace index built in its first request, which reads the stats at once: both walks would
#: be paid. Real GPU captures hold 59-103 bytes an event (8-GPU JAX ones), so one of 128 MiB
#: holds more than a million; a host-only one (17-26 bytes an event) reads no stat for its
#: trace at all.
STATS_LATER_MIN_BYTES_ENV = "TB_PROFILE_STATS_LATER_MIN_BYTES"
DEFAULT_STATS_LATER_MIN_BYTES = 128 << 20


def stats_later_min_bytes() -> int:
    text = os.environ.get(STATS_LATER_MIN_BYTES_ENV, "").strip()
    return int(text) if text.isdigit() else DEFAULT_STATS_LATER_MIN_BYTES


def _stats_later_fits(path: str, identity: fs.Identity) -> bool:
    """Whether the file at `path` is decoded events first when its reader asks: a local
    XSpace (its ranges read again later) of `stats_later_min_bytes` or more, with the
    compiled decoder (the numpy one walks a line whole)."""
    return (not fs.is_remote(path) and not is_kineto_file(path)
            and identity.size_bytes >= stats_later_min_bytes()
            and compiled_decoder_available())


@contextlib.contextmanager
def _reopened(path: str, identity: fs.Identity) -> Iterator[fs.LocalFile]:
    """The file at `path` for its stats' walk, as long as it is the one decoded (its identity
    before and after: else UnreadableProfile, xspace/stats_later.py `CHANGED`)."""
    if identify_profile(path) != identity:
        raise UnreadableProfile(CHANGED)
    with open_profile(path, ranges=True) as data:
        assert isinstance(data, fs.LocalFile)
        yield data
    if identify_profile(path) != identity:
        raise UnreadableProfile(CHANGED)


def _loaded(profile_ref: weakref.ref[Profile], key: str, directory: Path | None) -> None:
    """A profile's stats are walked (xspace/stats_later.py): its cache entry is written, and
    the store counts it again (`on_grow`)."""
    profile = profile_ref()
    if profile is None:
        return
    cache.save_later(profile, key, directory)
    grown = profile.derived.on_grow
    if grown is not None:
        grown()


def memory_cache_bytes() -> int:
    """The memory bound (TB_PROFILE_MEMORY_CACHE_BYTES; the default when unset or not a
    number)."""
    try:
        return int(os.environ.get(MEMORY_CACHE_ENV, DEFAULT_MEMORY_CACHE_BYTES))
    except ValueError:
        return DEFAULT_MEMORY_CACHE_BYTES


class ProfileStore:
    def __init__(self, max_bytes: int | None = None, disk_cache_dir: Path | None = None) -> None:
        self.max_bytes = memory_cache_bytes() if max_bytes is None else max_bytes
        self._disk_cache_dir = disk_cache_dir
        self._entries: collections.OrderedDict[str, _Entry] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        #: Decodes under way, by path (one per file: concurrent requests wait for it).
        self._jobs: dict[str, _Job] = {}
        #: Files that could not be decoded: identity -> the sentence (`FAILURES_KEPT`).
        self._failures: collections.OrderedDict[fs.Identity, str] = collections.OrderedDict()
        #: How many times a file was actually decoded (tests and the bench read it).
        self.decode_count = 0

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    def open(self, path: str, stats_later: bool = False) -> Profile:
        """The decoded profile at `path` (local or remote). Raises NotFound/UnreadableProfile.

        `stats_later`: the caller reads the events first (the trace viewer's first window), so
        a big local XSpace decoded now has its lines' stats walked when first used
        (`stats_later_min_bytes`, xspace/stats_later.py). A profile held already is served as
        it is."""
        identity = identify_profile(path)
        with self._lock:
            entry = self._entries.get(path)
            if entry and entry.identity == identity:
                self._entries.move_to_end(path)
                entry.profile.derived.measure()  # views built since it was counted
                self._evict_over_bound(keep=path)
                return entry.profile
            failure = self._failures.get(identity)
            if failure is not None:
                self._failures.move_to_end(identity)
                raise UnreadableProfile(failure)
            job = self._jobs.get(path)
            start = job is None or job.identity != identity
            if start:
                job = self._jobs[path] = _Job(identity)
        assert job is not None
        if start:
            if request_budget.active():  # finishes into the store whatever the request does
                threading.Thread(target=self._run, args=(path, job, stats_later), daemon=True,
                                 name=f"tb-profile decode {fs.basename(path)}").start()
            else:
                self._run(path, job, stats_later)
        profile = job.result()
        with self._lock:
            entry = self._entries.get(path)
            kept = entry is not None and entry.profile is profile
        if not kept:  # over the bound: its derived results go with the request (no cycle)
            request_budget.at_exit(profile.derived.clear)
        return profile

    def _run(self, path: str, job: _Job, stats_later: bool = False) -> None:
        """Decodes (or loads from the disk cache) the file at `path` for `job`, keeps it."""
        try:
            profile = self._load(path, job.identity, stats_later)
            self._remember(path, _Entry(profile, job.identity))
            job.profile = profile
        except Undecodable as exc:  # the same bytes would fail the same way: remembered
            self._remember_failure(job.identity, str(exc))
            job.error = UnreadableProfile(str(exc))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting requests
            job.error = exc
        finally:
            with self._lock:
                if self._jobs.get(path) is job:
                    del self._jobs[path]
            job.done.set()

    def _remember_failure(self, identity: fs.Identity, message: str) -> None:
        with self._lock:
            self._failures[identity] = message[:_FAILURE_TEXT_CHARS]
            self._failures.move_to_end(identity)
            while len(self._failures) > FAILURES_KEPT:
                self._failures.popitem(last=False)

    def _load(self, path: str, identity: fs.Identity, stats_later: bool = False) -> Profile:
        key = disk_key(path, identity)
        # Big entries: the lines' columns are read when first used (xspace/cache/lazy.py); a
        # part found damaged then comes from the file decoded again.
        cached = cache_lazy.load_lazily(key, self._disk_cache_dir,
                                        fallback=functools.partial(self._decode, path, key))
        if cached is not None:
            cached.derived.disk_key = (key, self._disk_cache_dir)
            return cached
        later = stats_later and _stats_later_fits(path, identity)
        profile = self._decode(path, key, identity if later else None)
        profile.derived.disk_key = (key, self._disk_cache_dir)
        return profile

    def _decode(self, path: str, key: str, stats_later: fs.Identity | None = None) -> Profile:
        """The file decoded, and its cache entry written off the request's path; with
        `stats_later` (the file's identity), its lines' stats are walked when first used, and
        the entry written then (xspace/stats_later.py)."""
        reopen = None if stats_later is None else functools.partial(
            _reopened, path, stats_later)
        with open_profile(path, ranges=True) as data:  # (its reading errors: not Undecodable)
            try:
                profile = decode_profile_bytes(path, data, reopen)
            except UnreadableProfile as exc:
                raise Undecodable(f"{fs.basename(path)}: {exc}") from exc
        with self._lock:
            self.decode_count += 1
        later = stats_later_of(profile)
        if later is None:
            cache.save_later(profile, key, self._disk_cache_dir)  # not on the request's path
        else:  # (written with its stats; counted again with them: `_grown`)
            later.name = fs.basename(path)  # (named in its errors, as the decode's are)
            later.when_loaded(functools.partial(
                _loaded, weakref.ref(profile), key, self._disk_cache_dir))
        return profile

    def _remember(self, path: str, entry: _Entry) -> None:
        with self._lock:
            old = self._entries.pop(path, None)
            if old is not None:
                old.profile.derived.clear()
            if _weight(entry.profile) > self.max_bytes:
                self._recount()
                return
            self._entries[path] = entry
            entry.profile.derived.on_grow = functools.partial(self._grown, path)
            self._evict_over_bound(keep=path)

    def _grown(self, path: str) -> None:
        """A view derived more from the profile at `path`: count it, evict others if over."""
        with self._lock:
            if path in self._entries:
                self._evict_over_bound(keep=path)

    def _evict_over_bound(self, keep: str) -> None:
        """Drops least recently used profiles (with everything derived from them) until the
        profiles and their derived results fit the bound; `keep` (being served) stays."""
        self._recount()
        for path in list(self._entries):
            if self._bytes <= self.max_bytes:
                break
            if path == keep:
                continue
            evicted = self._entries.pop(path)
            self._bytes -= _weight(evicted.profile)
            evicted.profile.derived.clear()  # a result may hold its profile: no cycle stays

    def _recount(self) -> None:
        self._bytes = sum(_weight(entry.profile) for entry in self._entries.values())

    def __contains__(self, path: str) -> bool:
        with self._lock:
            return path in self._entries
