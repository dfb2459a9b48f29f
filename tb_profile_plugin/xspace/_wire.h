/* Declarations the sources of tb_profile_plugin.xspace._wire share (one extension module
 * built from _wire.c, _wire_walk.c, _wire_dense_hash.c, _wire_dense_plan.c and
 * _wire_line_dense.c; see _wire.c). Functions shared between them carry the wire_ prefix
 * and hidden visibility: nothing but PyInit__wire leaves the module. The few small ones done
 * once a byte or row (the reader's, a column's growth, a code's width, a stat's worth) are
 * static inline here, so that each walk or pass keeps them inlined as when the module was
 * one source. */
#ifndef TB_PROFILE_WIRE_H
#define TB_PROFILE_WIRE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_INTERNAL __attribute__((visibility("hidden")))

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    const uint8_t *base;
    int error;
} Reader;

/* The byte-at-a-time reader: at most 10 bytes (the 10th's low bit is the value's bit 63);
 * a varint running past the end, or past 10 bytes (overlong), sets `error`. */
static inline uint64_t read_varint_bytes(Reader *r) {
    uint64_t value = 0;
    int shift = 0;
    while (r->p < r->end) {
        uint8_t byte = *r->p++;
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) return value;
        shift += 7;
        if (shift >= 70) break;
    }
    r->error = 1;
    return 0;
}

/* A varint as read_varint_bytes reads it, faster: one byte (a tag, an id, a length: most of
 * them) at once; one of 2 to 8 bytes from one 8-byte load where 8 bytes are left, its 7-bit
 * groups gathered by three shift-and-mask steps (no loop, no branch per byte); longer ones,
 * and those near the end, byte at a time (the same value or error). */
static inline uint64_t read_varint(Reader *r) {
    const uint8_t *p = r->p;
    if (__builtin_expect(p < r->end && *p < 0x80, 1)) {
        r->p = p + 1;
        return *p;
    }
    if (r->end - p >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        uint64_t ends = ~word & 0x8080808080808080ULL;  /* (little-endian: byte i, bit 8i+7) */
        if (ends) {
            uint64_t x = word & (ends ^ (ends - 1)) & 0x7F7F7F7F7F7F7F7FULL;  /* its bytes */
            x = (x & 0x007F007F007F007FULL) | ((x & 0x7F007F007F007F00ULL) >> 1);
            x = (x & 0x00003FFF00003FFFULL) | ((x & 0x3FFF00003FFF0000ULL) >> 2);
            x = (x & 0x000000000FFFFFFFULL) | ((x & 0x0FFFFFFF00000000ULL) >> 4);
            r->p = p + (__builtin_ctzll(ends) >> 3) + 1;
            return x;
        }
    }
    return read_varint_bytes(r);
}

/* Passes over a varint (one 8-byte load where 8 bytes are left and it ends in them). */
static inline void skip_varint(Reader *r) {
    if (r->end - r->p >= 8) {
        uint64_t word;
        memcpy(&word, r->p, 8);
        uint64_t ends = ~word & 0x8080808080808080ULL;  /* (little-endian: byte i, bit 8i+7) */
        if (ends) {
            r->p += (__builtin_ctzll(ends) >> 3) + 1;
            return;
        }
    }
    read_varint_bytes(r);
}

/* The end of the length-delimited value at r->p, its length read (r->p is then its first
 * byte); NULL when the length is malformed or runs past the message. */
static inline const uint8_t *value_end(Reader *r) {
    uint64_t n = read_varint(r);
    if (r->error || n > (uint64_t)(r->end - r->p)) return NULL;
    return r->p + n;
}

/* Skips one field's value of the given wire type; returns 0 on malformed input. */
static inline int skip_value(Reader *r, unsigned wire_type) {
    switch (wire_type) {
    case 0: read_varint(r); return !r->error;
    case 1: if (r->end - r->p < 8) return 0; r->p += 8; return 1;
    case 2: {
        const uint8_t *end = value_end(r);
        if (!end) return 0;
        r->p = end;
        return 1;
    }
    case 5: if (r->end - r->p < 4) return 0; r->p += 4; return 1;
    default: return 0;
    }
}

/* A column being filled: `item`-byte entries in memory of malloc, grown by doubling
 * (realloc: for large blocks glibc moves pages with mremap, nothing is copied). */
typedef struct {
    char *data;
    size_t item, cap;
} Col;

/* Room for `count` entries; 0 when memory ran out. Runs without the GIL (plain malloc). */
static inline int col_reserve(Col *c, size_t count) {
    if (count <= c->cap) return 1;
    size_t cap = c->cap ? c->cap : 256;
    while (cap < count) {
        if (cap > SIZE_MAX / 2 / c->item) return 0;  /* cap * item would overflow */
        cap *= 2;
    }
    char *grown = realloc(c->data, cap * c->item);
    if (!grown) return 0;
    c->data = grown;
    c->cap = cap;
    return 1;
}

/* A line's columns being filled. The id columns (meta, st_meta) start as int32 and the
 * lengths (st_length) as uint8, each widened only when an entry does not fit: the walk hands
 * over the columns the decoder keeps (narrowed as `_narrowed_ids` / `_narrowed_lengths`
 * narrow them), never int64 ids and int32 lengths to be copied narrower (7 bytes a stat row
 * less at the line's peak, when its bytes and every column are held at once). */
typedef struct {
    Col meta, offset, duration, occurrences, st_event, st_length, st_meta, st_value, st_kind;
    Py_ssize_t n_events, n_stats;
    int has_occurrences, no_memory;
    /* `decode_line_dense`'s passes (WALK_*): what a stat row is for, and their state. */
    int mode;
    struct LinePlan *line;
} Columns;

/* What the walk does: fill the events' columns alone, each event's stats passed over by
 * their length (`decode_line(buf, True)`, events only: xspace/stats_later.py), fill every
 * column (`decode_line`), or one of `decode_line_dense`'s passes: the events' columns and
 * each stat row seen (its checks, ranges, pairs), then each row coded, then the rows that
 * stay sparse written (events passed over). */
enum { WALK_EVENTS = -1, WALK_ROWS = 0, WALK_SEE, WALK_CODE, WALK_KEEP };

typedef struct {
    int64_t id, display_id, timestamp_ns, duration_ps;
    const uint8_t *name, *display_name;
    Py_ssize_t name_len, display_name_len;
} Header;

/* ---- A line's stats as dense coded columns (_wire_dense_plan.c, _wire_line_dense.c) ---- */

#define DENSE_MAX_STATS 64
#define DENSE_NO_STAT 0xFF
#define DENSE_ID_SLOTS (1 << 16)  /* stat ids handled: 0 .. 65535 (real ones: a few dozen) */
#define DENSE_MAX_STRING_BYTES (64LL << 20)
#define DENSE_LONG_STRING 65536

typedef struct {
    int64_t value, key;     /* integer value, or a string's offset and its 8-byte key */
    int32_t length, code;   /* string length; provisional code (order of first sight) */
    uint64_t hash;
} DenseEntry;

/* A hash table of one stat's distinct values, numbered in the order first seen. */
typedef struct {
    DenseEntry *entries;
    int32_t *buckets;        /* index into entries, -1 empty */
    size_t n_entries, cap_entries, n_buckets;
    int64_t last_value;      /* the last value looked up (strings: its key) and its code */
    int64_t max_value;       /* integers: the largest in the table (a larger one is new) */
    int32_t last_code, last_length;
    int has_last;
} DenseHash;

/* How pass two codes a stat: not at all (it stays sparse, or has one value on every event),
 * by its value's offset in a small range, or by a hash table (of integers or of strings). */
enum { CODE_NONE = 0, CODE_RANGE, CODE_HASH, CODE_STRING };

typedef struct {
    int64_t count, first_seen, vmin, vmax;
    int64_t string_bytes;    /* CODE_STRING: bytes of its strings so far */
    int kind, bad, method;
    int provisional_width;   /* CODE_RANGE: bytes of its provisional codes (offset + 1) */
    void *provisional;       /* CODE_RANGE: codes of `provisional_width` bytes, 0 absent */
    uint8_t *present;        /* CODE_RANGE: a mark per value of [vmin, vmax] */
    int32_t *tmp;            /* CODE_HASH / CODE_STRING: hash code per event, -1 absent */
    DenseHash hash;
    int64_t *table;          /* sorted distinct values, slot 0 unused */
    int32_t *table_len;
    int64_t n_table;         /* distinct values + 1; 0: the stat stays sparse */
    void *codes;
    int width;
} DenseStat;

typedef struct {
    const int32_t *row; const void *ids; const uint8_t *kind; const int64_t *value;
    const void *length; const uint8_t *strings;
    Py_ssize_t m, num_rows, n_strings, min_count;
    int id_size, length_size;
    int kept_positions;                /* note the kept rows' positions (`kept`) */
    int k, no_memory;
    int64_t stat_ids[DENSE_MAX_STATS];
    uint8_t order[DENSE_MAX_STATS];   /* first-sight rank -> rank among the sorted ids */
    uint8_t pairs[DENSE_MAX_STATS * DENSE_MAX_STATS];  /* sorted ranks a, b: a just before b */
    uint8_t *rank;                     /* per row, first-sight rank */
    int64_t *kept;                     /* positions of the rows of stats that stay sparse */
    Py_ssize_t n_kept;
    DenseStat st[DENSE_MAX_STATS];     /* by first-sight rank */
} DensePlan;

/* What pass two does with each stat's rows. A range-coded stat's row: the provisional code
 * (the value's offset in its range, + 1) written as 4 bytes at event r of the stat's codes of
 * 1, 2 or 4 bytes (`shift` 0, 1, 2: the bytes past a narrow code are zero, "absent", and its
 * later events are written after it, a stat that may be dense having at most one row an
 * event, in event order; 3 bytes of room past the end), its offset marked in `present`, no
 * branch on its width. A hash-coded stat's row (`slow`): `wire_dense_slow_row`. Other stats'
 * rows (`idle`) are passed over, their positions noted where they stay sparse (`keep`). */
typedef struct {
    int64_t base[DENSE_MAX_STATS];
    uint8_t *present[DENSE_MAX_STATS], *out[DENSE_MAX_STATS];
    uint8_t shift[DENSE_MAX_STATS], slow[DENSE_MAX_STATS], idle[DENSE_MAX_STATS];
    uint8_t keep[DENSE_MAX_STATS];
} DenseLanes;

/* decode_line_dense's plan of a line (_wire_line_dense.c; its rows: _wire_walk.c). */
typedef struct LinePlan {
    DensePlan d;
    DenseLanes lanes;
    uint8_t slot[DENSE_ID_SLOTS];      /* stat id -> first-sight rank */
    uint8_t first_pairs[DENSE_MAX_STATS * DENSE_MAX_STATS + 1];
    uint8_t kind0[DENSE_MAX_STATS];
    uint8_t keep[DENSE_MAX_STATS];     /* by first-sight rank: its rows stay sparse */
    uint8_t write[DENSE_MAX_STATS];    /* pass two writes its rows (`line_may_keep`) */
    int64_t row_bytes, slot_bytes;     /* `_worth_dense`'s costs */
    int64_t count[DENSE_MAX_STATS], vmin[DENSE_MAX_STATS], vmax[DENSE_MAX_STATS];
    uint64_t mixed;
    int32_t previous_row, longest;
    int previous, bail;                /* bail: a line left to decode_line */
    Py_ssize_t rows, n_kept;
    Col k_row, k_meta, k_kind, k_value, k_length;  /* the rows that stay sparse */
} LinePlan;

/* _wire.c: columns handed to Python. */
WIRE_INTERNAL PyObject *wire_block_of(Col *c, Py_ssize_t count);
WIRE_INTERNAL PyObject *wire_block_from(void *data, Py_ssize_t bytes);

/* _wire_walk.c: a line's bytes into columns, or into decode_line_dense's passes. */
WIRE_INTERNAL int wire_walk_line(const uint8_t *buf, Py_ssize_t size, Columns *cols, Header *h);
WIRE_INTERNAL void wire_free_columns(Columns *cols);

/* _wire_dense_hash.c: the tables of a stat's distinct values. */
WIRE_INTERNAL void wire_hash_free(DenseHash *t);
WIRE_INTERNAL int wire_dense_slow_row(DensePlan *d, DenseStat *t, int32_t r, int64_t v,
                                      int64_t length);
WIRE_INTERNAL int wire_cmp_int_entry(const void *a, const void *b);
WIRE_INTERNAL int wire_cmp_string_entry(const void *a, const void *b);

/* _wire_dense_plan.c: dense_plan's passes (decode_line_dense runs them a row at a time). */
WIRE_INTERNAL void wire_dense_free(DensePlan *d);
WIRE_INTERNAL void wire_dense_settle(DensePlan *d, int k, const uint8_t *kind0,
                                     const int64_t *count, const int64_t *vmin,
                                     const int64_t *vmax, uint64_t mixed,
                                     const uint8_t *first_pairs);
WIRE_INTERNAL int wire_dense_prepare(DensePlan *d, DenseLanes *lanes);
WIRE_INTERNAL int wire_dense_finish_range(DensePlan *d, DenseStat *t);
WIRE_INTERNAL int wire_dense_finish_hash(DensePlan *d, DenseStat *t);
WIRE_INTERNAL int wire_dense_outputs(DensePlan *d, Py_ssize_t num_rows, PyObject **out);
WIRE_INTERNAL PyObject *wire_dense_plan(PyObject *self, PyObject *args);
WIRE_INTERNAL PyObject *wire_rows_except(PyObject *self, PyObject *args);

/* _wire_line_dense.c: decode_line_dense. */
WIRE_INTERNAL PyObject *wire_decode_line_dense(PyObject *self, PyObject *args);

/* The bytes of a code into a table of `n_table` slots (the plan's passes, the walk's). */
static inline int dense_width(int64_t n_table) {
    return n_table <= 0xFF ? 1 : n_table <= 0xFFFF ? 2 : 4;
}

/* Whether `count` rows of a stat cost at most its codes and table of `n_table` slots, were
 * the codes of `dense_width(n_table)` bytes (at least theirs when `n_table` > 2): the stat
 * cannot be worth a dense column (`_worth_dense`) once it has that many distinct values. */
static inline int line_not_worth(const LinePlan *p, int64_t count, int64_t n_table) {
    return count * p->row_bytes <=
           (int64_t)dense_width(n_table) * p->d.num_rows + n_table * p->slot_bytes;
}

#endif
