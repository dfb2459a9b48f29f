"""Parse event names into framework ops: `name:Type` TensorFlow ops, tf.data iterators, memcpys.

Rules (xprof_reference.md §3.1, "Op-name parse"): split at the first `:`; `Iterator::...` is
tf.data; a name matching `[A-Za-z0-9.][A-Za-z0-9_./>-]*` with a type matching `[A-Z_]\\w*` is a
TensorFlow op; a lower-case type is a JAX op; a `MEMCPY{HToD,DToH,DToD,HToH}` prefix (any case)
is a memcpy, and so is the CUPTI tracer's spelling `Memcpy{H2D,D2H,D2D,P2P}` (the names of the
copies on NVIDIA GPU streams, TensorFlow and JAX alike; a peer-to-peer copy is device to
device), and so is ROCm's legacy tracer's `Copy{HostToDevice,DeviceToHost,DeviceToDevice,
HostToHost}`. The reference reads only the first spelling, and so counts JAX's host-to-device
copies as device compute. Anything else is not an op (user TraceMes, runtime internals).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

_TF_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_./>\-]*$")
_TF_TYPE = re.compile(r"^[A-Z_]\w*$")
_JAX_TYPE = re.compile(r"^[a-z_][\w\-]*$")
ITERATOR_PREFIX = "Iterator::"


class OpCategory(enum.IntEnum):
    NONE = 0
    TENSORFLOW = 1
    JAX = 2
    TF_DATA = 3
    MEMCPY_H2D = 4
    MEMCPY_D2H = 5
    MEMCPY_D2D = 6
    MEMCPY_H2H = 7


_MEMCPY = {
    "memcpyhtod": OpCategory.MEMCPY_H2D, "memcpydtoh": OpCategory.MEMCPY_D2H,
    "memcpydtod": OpCategory.MEMCPY_D2D, "memcpyhtoh": OpCategory.MEMCPY_H2H,
    "memcpyh2d": OpCategory.MEMCPY_H2D, "memcpyd2h": OpCategory.MEMCPY_D2H,
    "memcpyd2d": OpCategory.MEMCPY_D2D, "memcpyp2p": OpCategory.MEMCPY_D2D,
    # ROCm's legacy tracer (roctracer) names its copies `Copy<From>To<To>`.
    "copyhosttodevice": OpCategory.MEMCPY_H2D, "copydevicetohost": OpCategory.MEMCPY_D2H,
    "copydevicetodevice": OpCategory.MEMCPY_D2D, "copyhosttohost": OpCategory.MEMCPY_H2H,
}


@dataclass(frozen=True)
class Op:
    category: OpCategory
    name: str  # the op's name (for tf.data: the full iterator name)
    type: str  # the op's type ("MatMul", "Dataset" for tf.data, "MemcpyHToD", ...)

    @property
    def is_op(self) -> bool:
        return self.category != OpCategory.NONE


def parse_op(event_name: str) -> Op:
    lowered = event_name.lower()
    for prefix, category in _MEMCPY.items():
        if lowered.startswith(prefix):
            return Op(category, event_name, event_name[: len(prefix)])
    if event_name.startswith(ITERATOR_PREFIX):
        return Op(OpCategory.TF_DATA, event_name, "Dataset")
    name, sep, op_type = event_name.partition(":")
    if not sep or not _TF_NAME.match(name):
        return Op(OpCategory.NONE, event_name, "")
    if _TF_TYPE.match(op_type):
        return Op(OpCategory.TENSORFLOW, name, op_type)
    if _JAX_TYPE.match(op_type):
        return Op(OpCategory.JAX, name, op_type)
    return Op(OpCategory.NONE, event_name, "")


def is_tf_op_name(text: str) -> bool:
    """Whether text is a TensorFlow op name (the part before `:Type`)."""
    return bool(_TF_NAME.match(text))


def iterator_short_name(iterator_name: str) -> str:
    """`Iterator::Prefetch::Map` -> `Map` (the last component)."""
    return iterator_name.rsplit("::", 1)[-1]
