"""A line's stats as dense coded columns (`densify`), and string values gathered into a blob.

A decoder returns a line's stats as sparse rows, one per (event, stat) pair (model.py's
`StatColumns`): 18 bytes a row. A device line's events carry the same ten or so stats each,
mostly of a few distinct values (`hlo_module`, `kernel_details`, `scope_range_id`), so
`densify` keeps each stat that sits at most once on every event with one kind as a code per
event (uint8 / uint16 / int32: the narrowest that holds its distinct values, none at all for a
stat with one value on every event) into a table of its distinct values; str/bytes values are
told apart by their bytes, and the blob keeps each distinct string once. A stat stays in
sparse rows where its codes would cost more than its rows (a flow id on 2% of the events), or
where an event carries it twice or with two kinds (the rows' file order decides then).

Work is numpy over the line's rows, a pass per distinct stat id of the line (a few dozen at
most; more than `MAX_DENSE_STATS` and the rest stay sparse), never a loop per event; or, where
the compiled helper was built, two passes over the rows in C (`_wire.dense_plan`: no argsort,
no gathered copy of the rows, a table of each stat's value range instead of a sort), which
gives equal columns (gpu8_2m, 22.9M stat rows: 0.67-0.71 s -> 0.15 s of CPU).

The compiled decoder does most lines without sparse rows at all (`walk_line_dense`,
`_wire.decode_line_dense`): the same two passes read each stat straight from the line's bytes
(two walks of them), and only the rows that stay sparse, or may, are written (`densify_walked`
finishes the columns as `densify` would, keeping those rows' columns as the walk gives them).
An 8-GPU capture's kernel line of 1M events and 13M stats took a 504 MiB transient (the
line's bytes, 25 bytes a row of walked columns, the rows' copies), now 164 MiB.
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.xspace.file_fields import pure_path
from tb_profile_plugin.xspace.model import StatColumns
from tb_profile_plugin.xspace.schema import StatKind
from tb_profile_plugin.xspace.unique_rows import unique_ints

try:
    from tb_profile_plugin.xspace import _wire  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the numpy path does the same work
    _wire = None

#: Stat ids of a line tried for a dense column (a pass over the line's rows each).
MAX_DENSE_STATS = 64
#: Bytes of a sparse row (row 4, stat id 4, kind 1, value 8, length 1).
_SPARSE_ROW_BYTES = 18
#: Bytes of a distinct value's table slot (value 8, length 4).
_TABLE_SLOT_BYTES = 12
#: Strings of one length longer than this many bytes in all are not told apart by content
#: (their offsets are): the byte matrix would cost more than it saves.
_MAX_MATRIX_BYTES = 64 << 20

_STRING_KINDS = np.array([StatKind.STR, StatKind.BYTES], np.uint8)
_CHUNK_BYTES = 1 << 20
_LONG_STRING_BYTES = 1 << 16
_CODE_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.int32}


def gather_strings(
    buf: np.ndarray, kind: np.ndarray, value: np.ndarray, length: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Copy str/bytes stat values out of `buf` into one blob; returns (value, blob) with
    `value` rewritten in place to point into the blob."""
    is_string = np.isin(kind, _STRING_KINDS)
    if not is_string.any():
        return value, np.zeros(0, np.uint8)
    sel = np.flatnonzero(is_string)
    lengths = length[sel].astype(np.int64)
    new_starts = np.zeros(len(sel), np.int64)
    np.cumsum(lengths[:-1], out=new_starts[1:])
    blob = np.empty(int(lengths.sum()), np.uint8)
    # Byte k of the blob comes from buf[old_start + (k - new_start)] of its value; the index
    # array is built a chunk of about _CHUNK_BYTES at a time so it stays small next to the
    # blob (8 bytes of index per byte copied); a long string is a chunk of its own, copied as
    # one slice (a 100 MB string costs 100 MB, not 1.6 GB of index).
    is_long = lengths >= _LONG_STRING_BYTES
    new_chunk = np.diff(new_starts // _CHUNK_BYTES, prepend=-1) != 0
    new_chunk |= is_long
    new_chunk[1:] |= is_long[:-1]
    firsts = np.flatnonzero(new_chunk)
    for first, last in zip(firsts.tolist(), [*firsts[1:].tolist(), len(sel)], strict=True):
        begin = int(new_starts[first])
        if is_long[first]:
            source = int(value[sel[first]])
            blob[begin : begin + int(lengths[first])] = buf[source : source + int(lengths[first])]
            continue
        part = slice(first, last)
        count = int(lengths[part].sum())
        index = np.repeat(value[sel[part]] - new_starts[part], lengths[part])
        index += np.arange(begin, begin + count)
        blob[begin : begin + count] = buf[index]
    value[sel] = new_starts  # in place: the decoders' columns are writable and ours alone
    return value, blob


def densify(stats: StatColumns, num_rows: int, *, pure: bool | None = None) -> StatColumns:
    """`stats` of a line of `num_rows` events with its regular stats as dense columns (module
    docstring); the same stats, read the same way through StatColumns' methods. `pure` forces
    (True) or forbids (False) the numpy path; None takes the compiled one (`_wire.dense_plan`)
    when it was built and TB_PROFILE_PURE_DECODER is not 1. Both give equal columns."""
    if len(stats) == 0 or num_rows == 0 or len(stats.dense_ids):
        return stats
    if not pure_path(pure):
        planned = _compiled_plan(stats, num_rows)
        if planned is not None:
            return _densify_planned(stats, num_rows, planned)
    return _densify_numpy(stats, num_rows)


def _min_dense_count(num_rows: int) -> int:
    """The fewest rows of a stat worth a dense column: fewer cost less than even uint8 codes
    into a table of one value."""
    return (num_rows + 2 * _TABLE_SLOT_BYTES) // _SPARSE_ROW_BYTES + 1


def _worth_dense(count: int, width: int, num_rows: int, table_slots: int) -> bool:
    """Whether `count` sparse rows cost more than codes of `width` bytes and the table."""
    return count * _SPARSE_ROW_BYTES > width * num_rows + table_slots * _TABLE_SLOT_BYTES


_Chosen = tuple[int, int, np.ndarray, np.ndarray, "np.ndarray | None"]


def _densify_numpy(stats: StatColumns, num_rows: int) -> StatColumns:
    """`densify` in numpy: the rows grouped by stat with a stable argsort, a unique per stat."""
    stat_ids, rank = _ranks(stats.metadata_id)
    # The rows grouped by stat (a stable radix sort of small ranks: file order within each).
    order = np.argsort(rank, kind="stable")
    bounds = np.zeros(len(stat_ids) + 1, np.int64)
    np.cumsum(np.bincount(rank, minlength=len(stat_ids)), out=bounds[1:])
    order_ids = _event_order(stats.row, rank, stat_ids, order[bounds[:-1]])
    if not _keeps_event_order(stats.row, rank, stat_ids, order_ids):
        return stats  # an event lists stats against that order: rows alone keep it
    grouped = StatColumns(stats.row[order], stats.metadata_id[:0], stats.kind[order],
                          stats.value[order], stats.length[order], stats.strings)
    chosen: list[_Chosen] = []
    keep = np.ones(len(stats), bool)
    min_count = _min_dense_count(num_rows)
    for j, stat_id in enumerate(stat_ids[:MAX_DENSE_STATS].tolist()):
        part = slice(int(bounds[j]), int(bounds[j + 1]))
        count = part.stop - part.start
        if count < min_count:
            continue
        coded = _coded(grouped, part, num_rows)
        if coded is None:
            continue
        kind, table, lengths, codes = coded
        width = 0 if codes is None else codes.dtype.itemsize
        if not _worth_dense(count, width, num_rows, len(table)):
            continue
        chosen.append((stat_id, kind, table, lengths, codes))
        keep[order[part]] = False
    if not chosen:
        return StatColumns(stats.row, stats.metadata_id, stats.kind, stats.value,
                           stats.length, stats.strings, order_ids=order_ids)
    return _assemble(stats, np.flatnonzero(keep), chosen, order_ids)


def _compiled_plan(stats: StatColumns, num_rows: int) -> tuple | None:
    """`_wire.dense_plan` of the line's rows; None for a line it leaves to numpy (more than
    MAX_DENSE_STATS stat ids, ids past 65535, rows out of event order, columns of other
    types, long strings)."""
    row, ids, kind, value, length = (stats.row, stats.metadata_id, stats.kind, stats.value,
                                     stats.length)
    if row.dtype != np.int32 or kind.dtype != np.uint8 or value.dtype != np.int64 \
            or ids.dtype not in (np.int32, np.int64) \
            or length.dtype not in (np.uint8, np.uint16, np.int32) \
            or stats.strings.dtype != np.uint8:
        return None
    contiguous = [np.ascontiguousarray(a)
                  for a in (row, ids, kind, value, length, stats.strings)]
    row, ids, kind, value, length, strings = contiguous
    return _wire.dense_plan(row, ids, ids.dtype.itemsize, kind, value, length,
                            length.dtype.itemsize, strings, num_rows, _min_dense_count(num_rows))


def _densify_planned(stats: StatColumns, num_rows: int, planned: tuple) -> StatColumns:
    """`densify` from the compiled pass's plan: its stat ids, first rows, neighbour pairs,
    rank per row (the order of first sight) and each such rank's place among the sorted ids,
    the positions of the rows of the stats that cannot be dense, and each candidate stat's
    (count, kind, table, lengths, codes, width)."""
    ids_bytes, first_bytes, pair_bytes, rank, sorted_rank, kept_bytes, per_stat = planned
    stat_ids, order_ids = _planned_order(ids_bytes, first_bytes, pair_bytes)
    if order_ids is None:
        return stats  # an event lists stats against that order: rows alone keep it
    chosen, dropped = _chosen(stat_ids, per_stat, num_rows)
    if not chosen:
        return StatColumns(stats.row, stats.metadata_id, stats.kind, stats.value,
                           stats.length, stats.strings, order_ids=order_ids)
    if len(chosen) == sum(planned_stat is not None for planned_stat in per_stat):
        kept = np.frombuffer(kept_bytes, np.int64)  # every candidate chosen (the usual case)
    else:  # a candidate costs more dense than as rows: its rows stay too
        dropped_by_rank = dropped[np.frombuffer(sorted_rank, np.uint8)]
        kept = np.frombuffer(_wire.rows_except(rank, dropped_by_rank.tobytes()), np.int64)
    return _assemble(stats, kept, chosen, order_ids)


def _planned_order(ids_bytes: bytes, first_bytes: bytes, pair_bytes: bytes
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    """(the plan's stat ids, their event order), the order None where an event lists its
    stats against it (`_pairs_keep_order`)."""
    stat_ids = np.frombuffer(ids_bytes, np.int64)
    k = len(stat_ids)
    present = np.frombuffer(pair_bytes, np.uint8).reshape(k, k).astype(bool)
    order_ids = _order_of_pairs(stat_ids, present, np.frombuffer(first_bytes, np.int64))
    if not _pairs_keep_order(stat_ids, present, order_ids):
        return stat_ids, None
    return stat_ids, order_ids


def _chosen(stat_ids: np.ndarray, per_stat: list, num_rows: int
            ) -> tuple[list[_Chosen], np.ndarray]:
    """The planned stats worth a dense column (`_worth_dense`) and a mark (uint8) per stat id
    of those."""
    chosen: list[_Chosen] = []
    dropped = np.zeros(len(stat_ids), np.uint8)
    for j, planned_stat in enumerate(per_stat):
        if planned_stat is None:
            continue
        count, kind, table_buf, lengths_buf, codes_buf, width = planned_stat
        table = np.frombuffer(table_buf, np.int64)
        if not _worth_dense(count, width, num_rows, len(table)):
            continue
        codes = None if codes_buf is None else np.frombuffer(codes_buf, _CODE_DTYPES[width])
        chosen.append((int(stat_ids[j]), kind, table, np.frombuffer(lengths_buf, np.int32),
                       codes))
        dropped[j] = 1
    return chosen, dropped


def walk_line_dense(line_bytes: memoryview) -> tuple | None:
    """`_wire.decode_line_dense` of one encoded XLine: its header, event columns and stats
    planned and coded straight from its bytes (`densify_walked` finishes them), no column per
    stat row; None for a line that walk leaves to `decode_line` (and `densify`), or where the
    compiled helper was not built."""
    if _wire is None:
        return None
    return _wire.decode_line_dense(line_bytes, _SPARSE_ROW_BYTES, _TABLE_SLOT_BYTES)


def densify_walked(kept: StatColumns, num_rows: int, plan: tuple) -> StatColumns | None:
    """`densify`'s columns of a line walked by `walk_line_dense`: `kept` holds only the rows
    that stay sparse (file order; `strings`: the line's bytes), `plan` its stat ids, first
    rows, neighbour pairs, stats by sorted rank (as `_wire.dense_plan` gives them) and which
    stats' rows it kept. Equal to `densify` of every row of the line; None where that is not
    made of these (an event lists its stats against their order: every row stays sparse), for
    the decoder to walk the line into rows after all."""
    ids_bytes, first_bytes, pair_bytes, per_stat, keep_bytes = plan
    stat_ids, order_ids = _planned_order(ids_bytes, first_bytes, pair_bytes)
    if order_ids is None:
        return None
    chosen, dropped = _chosen(stat_ids, per_stat, num_rows)
    if not np.array_equal(dropped, 1 - np.frombuffer(keep_bytes, np.uint8)):
        return None  # (the walk weighs each stat as `_worth_dense` does: never)
    if not chosen:
        return StatColumns(kept.row, kept.metadata_id, kept.kind, kept.value, kept.length,
                           kept.strings, order_ids=order_ids)
    return _assemble(kept, None, chosen, order_ids)  # (every row of `kept`: no gathers)


def _ranks(stat_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct stat ids, each row's place among them as uint8/uint16/int64)."""
    distinct = unique_ints(stat_ids)[0]
    low, span = int(distinct[0]), int(distinct[-1]) - int(distinct[0]) + 1
    dtype = np.uint8 if len(distinct) <= 0xFF else np.uint16 if len(distinct) <= 0xFFFF \
        else np.int64
    if span <= max(4 * len(stat_ids), 1 << 16):  # small ids (every real line): a table
        table = np.zeros(span, dtype)
        table[distinct - low] = np.arange(len(distinct))
        return distinct, table[stat_ids - low]
    return distinct, np.searchsorted(distinct, stat_ids).astype(dtype)


def _coded(grouped: StatColumns, part: slice, num_rows: int
           ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray | None] | None:
    """(kind, raw values table with slot 0 unused, their lengths, code per event or None
    when every event has the table's one value) of the stat rows `grouped[part]`; None when
    they cannot be dense (an event twice, two kinds, a row without a value)."""
    rows = grouped.row[part]
    if len(rows) > num_rows or np.any(rows[1:] <= rows[:-1]):
        return None
    kinds = grouped.kind[part]
    kind = int(kinds[0])
    if kind == StatKind.NONE or np.any(kinds != kind):
        return None
    values = grouped.value[part]
    if kind in (StatKind.STR, StatKind.BYTES):
        lengths = grouped.length[part].astype(np.int64)
        firsts, inverse = _distinct_strings(grouped.strings, values, lengths)
        table, table_lengths = values[firsts], lengths[firsts]
    else:
        table, inverse = unique_ints(values, return_inverse=True)
        table_lengths = np.zeros(len(table), np.int64)
    table = np.concatenate([[0], table]).astype(np.int64)
    table_lengths = np.concatenate([[0], table_lengths]).astype(np.int32)
    if len(table) == 2 and len(rows) == num_rows:
        return kind, table, table_lengths, None
    dtype = np.uint8 if len(table) <= 0xFF else np.uint16 if len(table) <= 0xFFFF else np.int32
    codes = np.zeros(num_rows, dtype)
    codes[rows] = inverse + 1
    return kind, table, table_lengths, codes


def _distinct_strings(blob: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct string, the distinct string of each row) of the strings
    blob[offsets : offsets + lengths], told apart by their bytes, a group of one length at a
    time (a group too large for its byte matrix: by its offsets)."""
    inverse = np.empty(len(offsets), np.int64)
    firsts: list[np.ndarray] = []
    seen = 0
    by_length, group = unique_ints(lengths, return_inverse=True)
    for g, width in enumerate(by_length.tolist()):
        members = np.flatnonzero(group == g) if len(by_length) > 1 else np.arange(len(offsets))
        if width == 0:
            first, local = np.zeros(1, np.int64), np.zeros(len(members), np.int64)
        elif width > _LONG_STRING_BYTES or width * len(members) > _MAX_MATRIX_BYTES:
            _, first, local = np.unique(offsets[members], return_index=True,
                                        return_inverse=True)
        else:
            windows = np.lib.stride_tricks.sliding_window_view(blob, width)
            matrix = windows[offsets[members]]  # count x width bytes, no index matrix
            keys = _row_keys(matrix)
            _, first, local = np.unique(keys, return_index=True, return_inverse=True)
        firsts.append(members[first])
        inverse[members] = np.asarray(local).reshape(-1) + seen
        seen += len(first)
    return np.concatenate(firsts), inverse


def _row_keys(matrix: np.ndarray) -> np.ndarray:
    """One comparable key per row of a uint8 byte matrix: its bytes as an integer when they
    fit 8, else the row as one opaque record."""
    count, width = matrix.shape
    if width <= 8:
        padded = np.zeros((count, 8), np.uint8)
        padded[:, :width] = matrix
        return padded.view(np.uint64).reshape(-1)
    return np.ascontiguousarray(matrix).view(f"V{width}").reshape(-1)


def _event_order(row: np.ndarray, rank: np.ndarray, stat_ids: np.ndarray,
                 first_seen: np.ndarray) -> np.ndarray:
    """The line's stat ids in the order its events list them (`_order_of_pairs` of the pairs
    of stats that stand next to each other on an event); more than MAX_DENSE_STATS ids (not
    a producer's line): the order of first appearance (`first_seen`: each id's first row)."""
    k = len(stat_ids)
    if k > MAX_DENSE_STATS:
        return stat_ids[np.argsort(first_seen, kind="stable")].astype(np.int64)
    # Pair codes of neighbouring rows (k <= 64: they fit uint16); k*k for rows of two events.
    pair = rank[:-1].astype(np.uint16)
    pair *= k
    pair += rank[1:]
    pair[row[1:] != row[:-1]] = k * k
    present = np.bincount(pair, minlength=k * k + 1)[: k * k].reshape(k, k) > 0
    return _order_of_pairs(stat_ids, present, first_seen)


def _order_of_pairs(stat_ids: np.ndarray, present: np.ndarray, first_seen: np.ndarray
                    ) -> np.ndarray:
    """The stat ids in the order their events list them: `present[a, b]` says stat a stood
    just before stat b on some event; ids are taken in that order (a topological order over
    a few dozen ids), ties and contradictions by first appearance (`first_seen`)."""
    k = len(stat_ids)
    by_first = np.argsort(first_seen, kind="stable")
    before_all, after_all = np.nonzero(present)
    distinct = before_all != after_all
    before, after = before_all[distinct].tolist(), after_all[distinct].tolist()
    waiting = np.zeros(k, np.int64)
    np.add.at(waiting, np.asarray(after, np.int64), 1)
    followers: dict[int, list[int]] = {}
    for a, b in zip(before, after, strict=True):
        followers.setdefault(a, []).append(b)
    placed: list[int] = []
    done = np.zeros(k, bool)
    while len(placed) < k:  # a pass per id placed, over k ids: k^2 with k a few dozen
        ready = next((i for i in by_first.tolist() if not done[i] and waiting[i] == 0), None)
        if ready is None:  # a contradiction (a cycle): the earliest seen of the rest
            ready = next(i for i in by_first.tolist() if not done[i])
        done[ready] = True
        placed.append(ready)
        for b in followers.get(ready, []):
            waiting[b] -= 1
    return stat_ids[np.asarray(placed, np.int64)].astype(np.int64)


def _pairs_keep_order(stat_ids: np.ndarray, present: np.ndarray, order_ids: np.ndarray
                      ) -> bool:
    """`_keeps_event_order` from the neighbour pairs alone: no pair (a just before b on an
    event) puts b before a in `order_ids`."""
    place = np.empty(len(stat_ids), np.int64)
    place[np.searchsorted(stat_ids, order_ids)] = np.arange(len(order_ids))
    before, after = np.nonzero(present)
    return not bool(np.any(place[after] < place[before]))


def _keeps_event_order(row: np.ndarray, rank: np.ndarray, stat_ids: np.ndarray,
                       order_ids: np.ndarray) -> bool:
    """Whether every event lists its stats in `order_ids`' order (a stat repeated on an event
    may stand twice in a row), so that rows rebuilt from dense columns come back in the file's
    order. Real lines that do not: TF host threads whose events carry a stat twice, around
    others ((..., 4, 2, 3, 4)); those keep sparse rows."""
    place = np.empty(len(stat_ids), np.int64)
    place[np.searchsorted(stat_ids, order_ids)] = np.arange(len(order_ids))
    placed = place[rank]
    return not bool(np.any((placed[1:] < placed[:-1]) & (row[1:] == row[:-1])))


def _assemble(stats: StatColumns, kept: np.ndarray | None, chosen: list[_Chosen],
              order_ids: np.ndarray) -> StatColumns:
    """The StatColumns of the rows `kept` sparse (their positions; None: every row of
    `stats`, its columns kept as they are, not copied) and the `chosen` dense stats, with one
    new blob of the strings either still uses."""
    stripes: dict[int, list[np.ndarray]] = {1: [], 2: [], 4: []}
    widths, stripe_of = [], []
    for _, _, _, _, codes in chosen:
        width = 0 if codes is None else codes.dtype.itemsize
        widths.append(width)
        if codes is None:
            stripe_of.append(0)
        else:
            stripe_of.append(len(stripes[width]))
            stripes[width].append(codes)
    starts = np.zeros(len(chosen) + 1, np.int64)
    np.cumsum([len(table) for _, _, table, _, _ in chosen], out=starts[1:])
    lengths = np.concatenate([lens for _, _, _, lens, _ in chosen])
    dense_kind = np.array([kind for _, kind, _, _, _ in chosen], np.uint8)
    if kept is None:
        row, metadata_id, kind = stats.row, stats.metadata_id, stats.kind
        value, length = stats.value, stats.length
    else:
        row, metadata_id, kind = stats.row[kept], stats.metadata_id[kept], stats.kind[kept]
        value, length = stats.value[kept], stats.length[kept]
    num_kept = len(row)
    # One blob: the sparse rows' strings, then each dense string value once.
    text = np.repeat(np.isin(dense_kind, _STRING_KINDS), np.diff(starts))
    text[starts[:-1]] = False  # slot 0 of each table holds no value
    all_kind, all_value, all_length = _rows_and_tables(kind, value, length, chosen, text,
                                                       lengths)
    all_value, blob = gather_strings(stats.strings, all_kind, all_value, all_length)
    del all_kind, all_length
    return StatColumns(
        row, metadata_id, kind, all_value[:num_kept], length, blob,
        dense_ids=np.array([stat_id for stat_id, *_ in chosen], np.int64),
        dense_kind=dense_kind,
        dense_width=np.array(widths, np.uint8),
        dense_stripe=np.array(stripe_of, np.int64),
        dense_value_starts=starts,
        dense_values=all_value[num_kept:],
        dense_lengths=lengths,
        codes8=_joined(stripes[1], np.uint8),
        codes16=_joined(stripes[2], np.uint16),
        codes32=_joined(stripes[4], np.int32),
        order_ids=order_ids,
    )


def _rows_and_tables(kind: np.ndarray, value: np.ndarray, length: np.ndarray,
                     chosen: list[_Chosen], text: np.ndarray, lengths: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind uint8, value int64, length int64) of the sparse rows, then of every dense table's
    slots (kind STR where `text`, else NONE): each column written once into its place (a
    table of a value per event, copied and widened in steps, was most of a line's peak)."""
    num_kept, total = len(kind), len(kind) + len(text)
    all_kind = np.empty(total, np.uint8)
    all_kind[:num_kept] = kind
    all_kind[num_kept:] = StatKind.NONE
    all_kind[num_kept:][text] = StatKind.STR
    all_value = np.empty(total, np.int64)
    all_value[:num_kept] = value
    np.concatenate([table for _, _, table, _, _ in chosen], out=all_value[num_kept:])
    all_length = np.empty(total, np.int64)
    all_length[:num_kept] = length
    all_length[num_kept:] = lengths
    return all_kind, all_value, all_length


def _joined(stripes: list[np.ndarray], dtype: type) -> np.ndarray:
    """The stripes of one code width end to end; a single one as it is (no copy: the codes
    are the line's alone, fresh from the walk or `_coded`)."""
    if len(stripes) == 1:
        return stripes[0]
    return np.concatenate(stripes) if stripes else np.zeros(0, dtype)
