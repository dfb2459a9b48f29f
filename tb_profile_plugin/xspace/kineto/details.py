"""A kernel's launch facts as XPlane's `kernel_details` text (docs/pytorch.md "Stats on
events"): `regs:R shm:S grid:X,Y,Z block:X,Y,Z occ_pct:O`, from what its args hold.

`kernel_details(args_dicts)` reads the few args it needs of every kernel with C loops and
builds each distinct combination's text once (`kernel_details_text`); kernels of one launch
configuration share a text.
"""

from __future__ import annotations

from itertools import repeat

from tb_profile_plugin.xspace.producers import pytorch as pt

_SCALAR_ARGS = (pt.REGISTERS_ARG, pt.SHARED_MEMORY_ARG, *pt.OCCUPANCY_ARGS)
_LIST_ARGS = (pt.GRID_ARG, pt.BLOCK_ARG)
_KEYS = (*_SCALAR_ARGS, *_LIST_ARGS)
_PLAIN_SCALARS = frozenset({int, float, str, type(None)})


def kernel_details(args: list) -> list[str]:
    """Per kernel (its `args`, a dict or anything else), its details text."""
    if set(map(type, args)) != {dict}:
        return [kernel_details_text(a) for a in args]
    scalars: list[list] = [list(map(dict.get, args, repeat(key))) for key in _SCALAR_ARGS]
    lists: list[list] = [list(map(dict.get, args, repeat(key))) for key in _LIST_ARGS]
    # The fast path needs values that stand for themselves as dict keys: numbers, strings
    # or nulls (no bool: True == 1), and lists of those (as tuples) for grid and block.
    if any(not set(map(type, column)) <= _PLAIN_SCALARS for column in scalars) or any(
            set(map(type, column)) != {list} for column in lists):
        return [kernel_details_text(a) for a in args]
    as_tuples = [list(map(tuple, column)) for column in lists]
    if any(not set(map(type, v)) <= _PLAIN_SCALARS
           for column in as_tuples for v in dict.fromkeys(column)):
        return [kernel_details_text(a) for a in args]
    # Per kernel a key of its values and their types (1 and 1.0 differ in the text).
    keys = list(zip(*scalars, *map(map, repeat(type), scalars), *as_tuples, strict=True))
    del scalars, lists, as_tuples
    texts: dict[tuple, str] = dict.fromkeys(keys, "")
    width = len(_SCALAR_ARGS)
    for key in texts:
        values = (*key[:width], *(list(v) for v in key[2 * width:]))
        texts[key] = kernel_details_text(
            {k: v for k, v in zip(_KEYS, values, strict=True) if v is not None})
    return list(map(texts.__getitem__, keys))


def kernel_details_text(args: object) -> str:
    """`regs:R shm:S grid:X,Y,Z block:X,Y,Z occ_pct:O` from a kernel's args (what is there)."""
    if not isinstance(args, dict):
        return ""
    parts = []
    for token, key in (("regs", pt.REGISTERS_ARG), ("shm", pt.SHARED_MEMORY_ARG)):
        value = args.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{token}:{int(value)}")
    for token, key in (("grid", pt.GRID_ARG), ("block", pt.BLOCK_ARG)):
        value = args.get(key)
        if isinstance(value, list) and all(isinstance(v, int) for v in value):
            parts.append(f"{token}:{','.join(str(v) for v in value)}")
    for key in pt.OCCUPANCY_ARGS:
        value = args.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"occ_pct:{float(value):g}")
            break
    return " ".join(parts)
