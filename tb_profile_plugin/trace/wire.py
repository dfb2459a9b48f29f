"""Protobuf wire format written with numpy: the package's one encoder.

Scalars (`varint`, `key`, `int_field`, `len_field`) build the few header messages byte by byte;
`Rows` builds one message per row of numpy columns without a loop per row (the Perfetto export,
and the synthetic XSpaces of the benchmark and the tests); `repeated_messages` is the common
case of a repeated field whose messages hold only varint fields.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

VARINT = 0
LEN = 2


def varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def len_field(field: int, payload: bytes) -> bytes:
    return key(field, LEN) + varint(len(payload)) + payload


def int_field(field: int, value: int) -> bytes:
    return key(field, VARINT) + varint(value)


def varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Varint bytes of uint64 `values`: (matrix [n, 10] uint8, length per row)."""
    v = values.astype(np.uint64)
    shifts = np.arange(10, dtype=np.uint64) * np.uint64(7)
    groups = (v[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    bits = np.zeros(len(v), np.int64)
    x = v.copy()
    while np.any(x):
        bits += x > 0
        x >>= np.uint64(7)
    lengths = np.maximum(bits, 1)
    cont = np.arange(10)[None, :] < (lengths[:, None] - 1)
    matrix = (groups | np.where(cont, np.uint64(0x80), np.uint64(0))).astype(np.uint8)
    return matrix, lengths


class Rows:
    """Per-row byte strings built part by part: each part a byte matrix and a mask of the
    bytes in use, so a row's bytes are its masked matrix cells in column order."""

    def __init__(self, n: int) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.n = n

    def const(self, data: bytes) -> None:
        matrix = np.tile(np.frombuffer(data, np.uint8), (self.n, 1))
        self.parts.append((matrix, np.ones(matrix.shape, bool)))

    def varint(self, values: np.ndarray) -> None:
        matrix, lengths = varint_matrix(values)
        self.parts.append((matrix, np.arange(10)[None, :] < lengths[:, None]))

    def nested(self, field: int, rows: Rows) -> None:
        """`rows` as a length-delimited field of each row."""
        self.const(key(field, LEN))
        self.varint(rows.lengths)
        self.parts.append(rows.join())

    @property
    def lengths(self) -> np.ndarray:
        return np.sum([np.count_nonzero(mask, axis=1) for _, mask in self.parts], axis=0)

    def join(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.concatenate([m for m, _ in self.parts], axis=1),
                np.concatenate([k for _, k in self.parts], axis=1))

    def tobytes(self) -> bytes:
        """Every row's bytes, concatenated in row order."""
        matrix, mask = self.join()
        return matrix[mask].tobytes()


def repeated_messages(field: int, columns: Sequence[tuple[int, np.ndarray]]) -> bytes:
    """Repeated field `field`, one message per row, each holding the varint fields
    `(number, column)` (e.g. XLine.events: metadata_id 1, offset_ps 2, duration_ps 3)."""
    message = Rows(len(columns[0][1]))
    for number, values in columns:
        message.const(key(number, VARINT))
        message.varint(values)
    wrapped = Rows(message.n)
    wrapped.nested(field, message)
    return wrapped.tobytes()
