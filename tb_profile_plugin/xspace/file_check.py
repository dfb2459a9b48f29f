"""Refusing a local file that is no profile before reading it whole.

A file under the size limit (`fs.max_file_bytes`) can still cost far more than it seems to: a
4,000,000,000-byte sparse file (made with `truncate`) takes no disk space, but reading it
materialises 4 GB of zeros, and every request read it again (9.4 GB and 9 s each). Two checks
that read a few bytes refuse such files in milliseconds, before `fs.read_bytes`:

* **holes.** A profiler writes its file whole; a file of which more than `MAX_HOLE_BYTES` are
  holes (`fs.hole_bytes`: SEEK_HOLE / SEEK_DATA, where the filesystem has them) is refused.
* **envelope.** An XSpace is a sequence of length-delimited fields 1..4 (planes, errors,
  warnings, hostnames; xspace/decode.py `_structure` refuses anything else), and a plane
  starts with a valid protobuf tag (a field number of at least 1, a wire type that exists).
  The first `ENVELOPE_FIELDS` top-level fields are read with `pread` (a tag and a length each)
  and must be such fields, each inside the file; zeros (tag 0) are none.

What passes is read and decoded as before: the decoder's own checks are the reference, these
only refuse early what it would refuse late.
"""

from __future__ import annotations

import os

from tb_profile_plugin import fs
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_file

#: More holes than this (bytes) and a file is no profile (a profiler writes its file whole).
MAX_HOLE_BYTES = 1 << 20
#: How many top-level fields are checked before the file is read.
ENVELOPE_FIELDS = 64
_XSPACE_FIELDS = (1, 2, 3, 4)  # planes, errors, warnings, hostnames
_WIRE_TYPES = (0, 1, 2, 5)  # varint, 64-bit, length-delimited, 32-bit (3, 4: groups; 6, 7: none)
_VARINT_MAX_BYTES = 10


def _varint(buffer: bytes, pos: int) -> tuple[int, int] | None:
    """(value, next position) of the varint at `buffer[pos:]`, None when it does not end."""
    value = shift = 0
    for offset in range(_VARINT_MAX_BYTES):
        if pos + offset >= len(buffer):
            return None
        byte = buffer[pos + offset]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos + offset + 1
        shift += 7
    return None


def _refuse(path: str, why: str, what: str = "is not an .xplane.pb written by a profiler"
            ) -> UnreadableProfile:
    return UnreadableProfile(f"{fs.basename(path)} {what} ({why}); it was not read")


def check_local(path: str) -> None:
    """Raises UnreadableProfile (a sentence naming the file, 422) when the local file at
    `path` has holes or (an XSpace, not a PyTorch trace: JSON) does not start like an XSpace
    (module docstring); remote paths and files that cannot be opened are left to the
    reader."""
    if fs.is_remote(path):
        return
    try:
        fd = os.open(path, fs.READ_FLAGS)
    except OSError:
        return  # the reader says why
    try:
        size = os.fstat(fd).st_size
        holes = fs.hole_bytes(fd, size, MAX_HOLE_BYTES)
        if holes > MAX_HOLE_BYTES:
            raise _refuse(path, f"at least {holes:,} of its {size:,} bytes are holes, never "
                                "written")
        if not is_kineto_file(path):  # a PyTorch trace is JSON: its decoder checks it
            _check_envelope(path, fd, size)
    except OSError:
        return
    finally:
        os.close(fd)


def _check_envelope(path: str, fd: int, size: int) -> None:
    pos = 0
    for _ in range(ENVELOPE_FIELDS):
        if pos >= size:
            return
        head = os.pread(fd, 2 * _VARINT_MAX_BYTES + 1, pos)
        tag = _varint(head, 0)
        if tag is None or tag[0] >> 3 not in _XSPACE_FIELDS or tag[0] & 7 != 2:
            raise _refuse(path, f"byte {pos:,} holds no XSpace field")
        length = _varint(head, tag[1])
        if length is None or length[1] + pos + length[0] > size:
            raise _refuse(path, f"the field at byte {pos:,} runs past the end of the file",
                          "is truncated (the capture did not finish writing it) or is not an "
                          ".xplane.pb")
        value_start = pos + length[1]
        if tag[0] >> 3 == 1 and length[0]:  # a plane: it starts with a tag
            inner = _varint(os.pread(fd, _VARINT_MAX_BYTES, value_start), 0)
            if inner is None or inner[0] >> 3 < 1 or inner[0] & 7 not in _WIRE_TYPES:
                raise _refuse(path, f"the plane at byte {pos:,} starts with no XPlane field")
        pos = value_start + length[0]
