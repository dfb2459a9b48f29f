/* Optional accelerator: decode one encoded XLine straight from its wire bytes into columns.
 *
 * decode_line(buf) walks the XLine message once, filling columns that grow as needed (room
 * for one event per 16 bytes of the line first, doubled by realloc, which moves the pages of
 * a large block without copying; pages never written are never touched), each returned as a
 * writable buffer owning its memory. Python wraps the columns with numpy.frombuffer (no
 * copy). It walked the line twice before, once to count: the 20M-event capture's decode
 * took 1.75 s, 1.1-1.4 s in one pass. (Huge pages, asked for with madvise, made it slower
 * and more variable on the VM measured: 1.3-3.2 s, first touches of 2 MiB.) The pure-numpy
 * decoder in wire_numpy.py computes the same columns and stays the reference; tests check
 * that both agree with protobuf's own parse.
 *
 * Returned tuple (all integers little-endian, native width as named):
 *   id, display_id, name (bytes), display_name (bytes), timestamp_ns, duration_ps,
 *   (columns are writable buffers, `Block`s)
 *   event_metadata_id (int32[n], int64 where an id does not fit), event_offset_ps (int64[n]),
 *   event_duration_ps (int64[n]),
 *   event_num_occurrences (int64[n]) or None when no event is an aggregate,
 *   stat_event_index (int32[m]), stat_metadata_id (int32[m], int64 where an id does not fit),
 *   stat_kind (uint8[m]),
 *   stat_value (int64[m]: raw bits; for str/bytes the offset of the value in buf),
 *   stat_length (uint8[m], uint16 or int32 where a length does not fit: byte length of
 *   str/bytes values, else 0),
 *   then the entry widths of event_metadata_id, stat_metadata_id and stat_length (empty
 *   columns: 8, 8 and 4, the widths `_narrowed_ids` / `_narrowed_lengths` leave them at)
 * Stat kinds: 1 double, 2 uint64, 3 int64, 4 str, 5 bytes, 6 ref (see schema.py).
 *
 * decode_line_dense (further down) walks a line the same way but codes its stats as it goes
 * (dense_plan's passes, a stat row at a time), writing rows only for the stats that stay
 * sparse: the decoder's first choice, decode_line where it declines a line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    const uint8_t *base;
    int error;
} Reader;

static inline uint64_t read_varint(Reader *r) {
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
    read_varint(r);
}

/* Skips one field's value of the given wire type; returns 0 on malformed input. */
static inline int skip_value(Reader *r, unsigned wire_type) {
    switch (wire_type) {
    case 0: read_varint(r); return !r->error;
    case 1: if (r->end - r->p < 8) return 0; r->p += 8; return 1;
    case 2: {
        uint64_t n = read_varint(r);
        if (r->error || n > (uint64_t)(r->end - r->p)) return 0;
        r->p += n;
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
static int col_reserve(Col *c, size_t count) {
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

/* The column's first `filled` entries widened in place to `item` bytes each (a wider item
 * than now): integers of 4 bytes sign-extended to 8 (metadata ids), of 1 or 2 bytes
 * zero-extended to 2 or 4 (lengths). The entries are moved from the last one back, so that
 * no entry is overwritten before it is read. 0 when memory ran out. */
static int col_widen(Col *c, size_t filled, size_t item) {
    if (c->cap) {
        if (c->cap > SIZE_MAX / item) return 0;
        char *grown = realloc(c->data, c->cap * item);
        if (!grown) return 0;
        c->data = grown;
    }
    size_t old = c->item;
    c->item = item;
    for (size_t k = filled; k-- > 0;) {
        if (old == 4) ((int64_t *)c->data)[k] = ((const int32_t *)c->data)[k];
        else if (old == 1 && item == 2) ((uint16_t *)c->data)[k] = ((const uint8_t *)c->data)[k];
        else if (old == 1) ((int32_t *)c->data)[k] = ((const uint8_t *)c->data)[k];
        else ((int32_t *)c->data)[k] = ((const uint16_t *)c->data)[k];
    }
    return 1;
}

/* Entry `i` of an id column kept as int32 while every id fits (`_narrowed_ids` in
 * decode.py), widened to int64 at the first that does not. 0 when memory ran out. */
static inline int put_id(Col *c, size_t i, int64_t id) {
    if (c->item == 4 && (id < INT32_MIN || id > INT32_MAX) && !col_widen(c, i, 8)) return 0;
    if (c->item == 4) ((int32_t *)c->data)[i] = (int32_t)id;
    else ((int64_t *)c->data)[i] = id;
    return 1;
}

/* Entry `i` of a length column kept as uint8, then uint16, while every length fits
 * (`_narrowed_lengths` in decode.py), else int32. 0 when memory ran out. */
static inline int put_length(Col *c, size_t i, int32_t length) {
    size_t need = length <= 0xFF ? 1 : length <= 0xFFFF ? 2 : 4;
    if (need > c->item && !col_widen(c, i, need)) return 0;
    if (c->item == 1) ((uint8_t *)c->data)[i] = (uint8_t)length;
    else if (c->item == 2) ((uint16_t *)c->data)[i] = (uint16_t)length;
    else ((int32_t *)c->data)[i] = length;
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

/* What the walk does: fill every column (`decode_line`), or one of `decode_line_dense`'s
 * passes: the events' columns and each stat row seen (its checks, ranges, pairs), then
 * each row coded, then the rows that stay sparse written (events passed over). */
enum { WALK_ROWS = 0, WALK_SEE, WALK_CODE, WALK_KEEP };

static int line_row(Columns *cols, int32_t event_index, int64_t meta, uint8_t kind,
                    int64_t value, int32_t length);

/* Decodes one XStat in [p, end) into the stat columns. */
static int decode_stat(Reader *outer, const uint8_t *p, const uint8_t *end, Columns *cols,
                       int32_t event_index) {
    Reader r = {p, end, outer->base, 0};
    int64_t meta = 0, value = 0;
    int32_t length = 0;
    uint8_t kind = 0;
    while (r.p < r.end) {
        uint64_t tag = read_varint(&r);
        if (r.error) return 0;
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (field == 1 && wt == 0) { meta = (int64_t)read_varint(&r); }
        else if (field == 2 && wt == 1) {
            if (r.end - r.p < 8) return 0;
            memcpy(&value, r.p, 8); r.p += 8; kind = 1;
        }
        else if ((field == 3 || field == 4 || field == 7) && wt == 0) {
            value = (int64_t)read_varint(&r);
            kind = field == 3 ? 2 : field == 4 ? 3 : 6;
        }
        else if ((field == 5 || field == 6) && wt == 2) {
            uint64_t n = read_varint(&r);
            if (r.error || n > (uint64_t)(r.end - r.p) || n > INT32_MAX) return 0;
            value = (int64_t)(r.p - r.base); length = (int32_t)n; r.p += n;
            kind = field == 5 ? 4 : 5;
        }
        else if (!skip_value(&r, wt)) return 0;
        if (r.error) return 0;
    }
    if (cols->mode != WALK_ROWS) return line_row(cols, event_index, meta, kind, value, length);
    Py_ssize_t i = cols->n_stats;
    if (!col_reserve(&cols->st_event, i + 1) || !col_reserve(&cols->st_meta, i + 1) ||
        !col_reserve(&cols->st_kind, i + 1) || !col_reserve(&cols->st_value, i + 1) ||
        !col_reserve(&cols->st_length, i + 1)) {
        cols->no_memory = 1;
        return 0;
    }
    if (!put_id(&cols->st_meta, (size_t)i, meta) ||
        !put_length(&cols->st_length, (size_t)i, length)) {
        cols->no_memory = 1;
        return 0;
    }
    ((int32_t *)cols->st_event.data)[i] = event_index;
    ((uint8_t *)cols->st_kind.data)[i] = kind;
    ((int64_t *)cols->st_value.data)[i] = value;
    cols->n_stats++;
    return 1;
}

/* Decodes one XEvent in [p, end) into the event columns. */
static int decode_event(Reader *outer, const uint8_t *p, const uint8_t *end, Columns *cols) {
    Reader r = {p, end, outer->base, 0};
    int64_t meta = 0, offset = 0, duration = 0, occurrences = 0;
    Py_ssize_t index = cols->n_events;
    int written = cols->mode > WALK_SEE;  /* (the events' columns are: their fields passed) */
    while (r.p < r.end) {
        uint64_t tag = read_varint(&r);
        if (r.error) return 0;
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (wt == 0 && written) skip_varint(&r);
        else if (wt == 0 && field == 1) meta = (int64_t)read_varint(&r);
        else if (wt == 0 && field == 2) { offset = (int64_t)read_varint(&r); occurrences = 0; }
        else if (wt == 0 && field == 3) duration = (int64_t)read_varint(&r);
        else if (wt == 0 && field == 5) { occurrences = (int64_t)read_varint(&r); offset = 0; }
        else if (wt == 2 && field == 4) {
            uint64_t n = read_varint(&r);
            if (r.error || n > (uint64_t)(r.end - r.p)) return 0;
            if (!decode_stat(&r, r.p, r.p + n, cols, (int32_t)index)) return 0;
            r.p += n;
        }
        else if (!skip_value(&r, wt)) return 0;
        if (r.error) return 0;
    }
    if (written) {
        cols->n_events++;
        return 1;
    }
    if (!col_reserve(&cols->meta, index + 1) || !col_reserve(&cols->offset, index + 1) ||
        !col_reserve(&cols->duration, index + 1)) {
        cols->no_memory = 1;
        return 0;
    }
    if (occurrences && !cols->has_occurrences) { /* the first aggregate: zeros before it */
        if (!col_reserve(&cols->occurrences, cols->meta.cap)) {
            cols->no_memory = 1;
            return 0;
        }
        memset(cols->occurrences.data, 0, (size_t)index * 8);
        cols->has_occurrences = 1;
    }
    if (!put_id(&cols->meta, (size_t)index, meta)) {
        cols->no_memory = 1;
        return 0;
    }
    ((int64_t *)cols->offset.data)[index] = offset;
    ((int64_t *)cols->duration.data)[index] = duration;
    if (cols->has_occurrences) {
        if (!col_reserve(&cols->occurrences, index + 1)) {
            cols->no_memory = 1;
            return 0;
        }
        ((int64_t *)cols->occurrences.data)[index] = occurrences;
    }
    cols->n_events++;
    return 1;
}

typedef struct {
    int64_t id, display_id, timestamp_ns, duration_ps;
    const uint8_t *name, *display_name;
    Py_ssize_t name_len, display_name_len;
} Header;

/* One pass over the XLine message: its header and every event into `cols` (whose event
 * columns start with room for one event per 16 bytes of the line, grown when that is short;
 * only the entries written are ever touched). */
static int walk_line(const uint8_t *buf, Py_ssize_t size, Columns *cols, Header *h) {
    Reader r = {buf, buf + size, buf, 0};
    size_t guess = cols->mode > WALK_SEE ? 0 : (size_t)size / 16 + 1;
    if (!col_reserve(&cols->meta, guess) || !col_reserve(&cols->offset, guess) ||
        !col_reserve(&cols->duration, guess)) {
        cols->no_memory = 1;
        return 0;
    }
    while (r.p < r.end) {
        uint64_t tag = read_varint(&r);
        if (r.error) return 0;
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (wt == 0 && (field == 1 || field == 3 || field == 9 || field == 10)) {
            int64_t v = (int64_t)read_varint(&r);
            if (field == 1) h->id = v;
            else if (field == 3) h->timestamp_ns = v;
            else if (field == 9) h->duration_ps = v;
            else h->display_id = v;
        }
        else if (wt == 2 && (field == 2 || field == 4 || field == 11)) {
            uint64_t n = read_varint(&r);
            if (r.error || n > (uint64_t)(r.end - r.p)) return 0;
            if (field == 4) {
                if (!decode_event(&r, r.p, r.p + n, cols)) return 0;
            } else if (field == 2) { h->name = r.p; h->name_len = (Py_ssize_t)n; }
            else { h->display_name = r.p; h->display_name_len = (Py_ssize_t)n; }
            r.p += n;
        }
        else if (!skip_value(&r, wt)) return 0;
        if (r.error) return 0;
    }
    return 1;
}

/* A column handed to Python: owns its malloc'd memory and exports it as a writable buffer
 * (numpy.frombuffer wraps it without a copy; the decoder adjusts some columns in place). */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
} Block;

static int block_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Block *block = (Block *)self;
    return PyBuffer_FillInfo(view, self, block->data, block->size, 0, flags);
}

static void block_dealloc(PyObject *self) {
    free(((Block *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs block_buffer = {block_getbuffer, NULL};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tb_profile_plugin.xspace._wire.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = block_dealloc,
    .tp_as_buffer = &block_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A decoded column's memory (a writable buffer).",
};

/* The column's first `count` entries as a Block (the rest of its room given back); the
 * column is emptied (its memory now the Block's). NULL with an error set on failure. */
static PyObject *block_of(Col *c, Py_ssize_t count) {
    size_t bytes = (size_t)count * c->item;
    char *data = c->data;
    if (bytes < c->cap * c->item) {
        char *shrunk = realloc(data, bytes ? bytes : 1);
        if (shrunk) data = shrunk;
    }
    if (!data) data = malloc(1);
    if (!data) return PyErr_NoMemory();
    c->data = NULL;
    c->cap = 0;
    Block *block = PyObject_New(Block, &BlockType);
    if (!block) {
        free(data);
        return NULL;
    }
    block->data = data;
    block->size = (Py_ssize_t)bytes;
    return (PyObject *)block;
}

static void free_columns(Columns *cols) {
    Col *all[] = {&cols->meta, &cols->offset, &cols->duration, &cols->occurrences,
                  &cols->st_event, &cols->st_length, &cols->st_meta, &cols->st_value,
                  &cols->st_kind};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        free(all[k]->data);
        all[k]->data = NULL;
    }
}

static PyObject *decode_line(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const uint8_t *buf = (const uint8_t *)view.buf;
    Columns cols;
    memset(&cols, 0, sizeof cols);
    cols.offset.item = cols.duration.item = cols.occurrences.item = cols.st_value.item = 8;
    cols.meta.item = cols.st_meta.item = cols.st_event.item = 4;  /* (ids: widened as needed) */
    cols.st_kind.item = cols.st_length.item = 1;                  /* (lengths: the same) */
    Header h;
    memset(&h, 0, sizeof h);
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = walk_line(buf, view.len, &cols, &h);
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyBuffer_Release(&view);
        free_columns(&cols);
        if (cols.no_memory) return PyErr_NoMemory();
        PyErr_SetString(PyExc_ValueError, "malformed XLine: truncated or not protobuf");
        return NULL;
    }
    Py_ssize_t n = cols.n_events, m = cols.n_stats;
    /* Entry widths of the narrowed columns; empty ones as `_narrowed_*` leave them. */
    int meta_size = n ? (int)cols.meta.item : 8, st_meta_size = m ? (int)cols.st_meta.item : 8,
        st_length_size = m ? (int)cols.st_length.item : 4;
    /* meta, offset, duration, occurrences, stat event, meta, kind, value, length */
    Col *source[9] = {&cols.meta, &cols.offset, &cols.duration, &cols.occurrences,
                      &cols.st_event, &cols.st_meta, &cols.st_kind, &cols.st_value,
                      &cols.st_length};
    PyObject *out[9] = {NULL}, *name = NULL, *display = NULL;
    int failed = 0;
    for (int k = 0; k < 9 && !failed; k++) {
        if (k == 3 && !cols.has_occurrences) out[k] = Py_NewRef(Py_None);
        else out[k] = block_of(source[k], k < 4 ? n : m);
        failed = out[k] == NULL;
    }
    if (!failed) {
        name = PyBytes_FromStringAndSize((const char *)h.name, h.name_len);
        display = name ? PyBytes_FromStringAndSize((const char *)h.display_name,
                                                   h.display_name_len) : NULL;
        failed = display == NULL;
    }
    PyBuffer_Release(&view);
    free_columns(&cols);
    if (failed) {
        for (int k = 0; k < 9; k++) Py_XDECREF(out[k]);
        Py_XDECREF(name);
        Py_XDECREF(display);
        return NULL;
    }
    PyObject *o_meta = out[0], *o_offset = out[1], *o_dur = out[2], *o_occ = out[3],
             *o_sev = out[4], *o_smeta = out[5], *o_skind = out[6], *o_sval = out[7],
             *o_slen = out[8];
    return Py_BuildValue("LLNNLLNNNNNNNNNiii", (long long)h.id, (long long)h.display_id, name,
                         display, (long long)h.timestamp_ns, (long long)h.duration_ps, o_meta,
                         o_offset, o_dur, o_occ, o_sev, o_smeta, o_skind, o_sval, o_slen,
                         meta_size, st_meta_size, st_length_size);
}

/* scan_fields(buf, start, end) -> bytes of int64 rows (field, wire_type, record_start,
 * value_start, end), one per top-level field of the message in buf[start:end]: record_start is
 * where the tag begins, value_start where the value (for length-delimited fields: the payload,
 * after the length) begins, end where the field ends. */
static PyObject *scan_fields(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end)) return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)view.buf;
    Py_ssize_t capacity = 64, count = 0;
    int64_t *out = PyMem_Malloc(capacity * 5 * sizeof(int64_t));
    Reader r = {base + start, base + end, base, 0};
    int ok = out != NULL;
    while (ok && r.p < r.end) {
        const uint8_t *record = r.p;
        uint64_t tag = read_varint(&r);
        unsigned wt = (unsigned)(tag & 7);
        if (r.error || (tag >> 3) == 0) { ok = 0; break; }
        const uint8_t *value_start = r.p;
        if (wt == 2) {
            uint64_t n = read_varint(&r);
            if (r.error || n > (uint64_t)(r.end - r.p)) { ok = 0; break; }
            value_start = r.p;
            r.p += n;
        } else if (!skip_value(&r, wt)) { ok = 0; break; }
        if (count == capacity) {
            capacity *= 2;
            int64_t *grown = PyMem_Realloc(out, capacity * 5 * sizeof(int64_t));
            if (!grown) { ok = 0; break; }
            out = grown;
        }
        int64_t *row = out + 5 * count;
        row[0] = (int64_t)(tag >> 3);
        row[1] = wt;
        row[2] = record - base;
        row[3] = value_start - base;
        row[4] = r.p - base;
        count++;
    }
    PyBuffer_Release(&view);
    if (!ok) {
        PyMem_Free(out);
        PyErr_SetString(PyExc_ValueError, "malformed message: truncated or not protobuf");
        return NULL;
    }
    PyObject *result = PyBytes_FromStringAndSize((const char *)out, count * 5 * sizeof(int64_t));
    PyMem_Free(out);
    return result;
}

/* ---- A line's stats as dense coded columns (dense_stats.py's `densify`, compiled) ----------
 *
 * dense_plan(row, ids, id_size, kind, value, length, length_size, strings, num_rows,
 * min_count) does what dense_stats.py's numpy path does with an argsort, gathers and
 * a unique per stat, in two passes over a line's sparse stat rows and no copy of them. Pass
 * one ranks each row's stat id (by first sight), checks each stat (at most once on an event,
 * one kind, not NONE), notes which stats stand next to each other on an event (the k x k
 * "stands before" matrix) and each stat's range of values. Pass two writes, for each stat
 * that may be dense (also at least `min_count` rows), a provisional code per event: its
 * value's offset in that range, marked as present (integers of a small range), or its value's
 * number in a hash table (str/bytes by their bytes, integers spread wide). Each such stat's
 * table of distinct values is then sorted as numpy's unique sorts them (integers by value;
 * str/bytes by length, then by their bytes) and its codes rewritten as ranks in that table,
 * in the narrowest width. (Copying each stat's rows out first, a counting sort, cost more:
 * 12 bytes a row of fresh pages.) A line it does not handle (more than 64 stat ids, ids
 * past 65535, rows out of event order or past the line, very long strings) gives None: the
 * numpy path does that line, and dense_stats.py's tests check that both paths give equal
 * columns. The work runs without the GIL (the decoder densifies lines on its threads). */

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

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The bytes of a string of at most 8 as numpy's key: zero-padded, read as a native uint64
 * (one 8-byte load and a mask where 8 bytes are left in the blob). */
static inline int64_t short_key(const uint8_t *p, int32_t length, int64_t left) {
    uint64_t key = 0;
    if (left >= 8) {
        memcpy(&key, p, 8);
        return (int64_t)(length == 8 ? key : key & ((1ULL << (8 * length)) - 1));
    }
    memcpy(&key, p, (size_t)length);
    return (int64_t)key;
}

static uint64_t bytes_hash(const uint8_t *p, int32_t length) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)length;
    int32_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = mix64(h ^ w);
    }
    if (i < length) {
        uint64_t w = 0;
        memcpy(&w, p + i, (size_t)(length - i));
        h = mix64(h ^ w ^ 0x5bd1e995ULL);
    }
    return h;
}

static void hash_free(DenseHash *t) {
    free(t->entries);
    free(t->buckets);
}

/* Room for one more entry at most half the buckets full; 0 when memory ran out. */
static int hash_grow(DenseHash *t) {
    if (t->n_entries < t->cap_entries && 2 * (t->n_entries + 1) <= t->n_buckets) return 1;
    if (t->n_entries == t->cap_entries) {
        size_t cap = t->cap_entries ? 2 * t->cap_entries : 64;
        DenseEntry *grown = realloc(t->entries, cap * sizeof *grown);
        if (!grown) return 0;
        t->entries = grown;
        t->cap_entries = cap;
    }
    if (2 * (t->n_entries + 1) > t->n_buckets) {
        size_t n = t->n_buckets ? 2 * t->n_buckets : 128;
        int32_t *b = malloc(n * sizeof *b);
        if (!b) return 0;
        memset(b, 0xFF, n * sizeof *b);
        for (size_t e = 0; e < t->n_entries; e++) {
            size_t at = (size_t)t->entries[e].hash & (n - 1);
            while (b[at] >= 0) at = (at + 1) & (n - 1);
            b[at] = (int32_t)e;
        }
        free(t->buckets);
        t->buckets = b;
        t->n_buckets = n;
    }
    return 1;
}

/* A new entry for a value not in the table; -1 when memory ran out. */
static int32_t hash_add(DenseHash *t, DenseEntry entry) {
    if (!hash_grow(t)) return -1;
    size_t mask = t->n_buckets - 1, at = (size_t)entry.hash & mask;
    while (t->buckets[at] >= 0) at = (at + 1) & mask;
    int32_t e = (int32_t)t->n_entries++;
    entry.code = e;
    t->entries[e] = entry;
    t->buckets[at] = e;
    return e;
}

/* The provisional code of an integer value (a new one at first sight); -1: out of memory. */
static int32_t hash_int_code(DenseHash *t, int64_t value) {
    if (t->has_last && t->last_value == value) return t->last_code;
    uint64_t h = mix64((uint64_t)value);
    int32_t e = -1;
    if (t->n_entries && value <= t->max_value) {  /* (increasing ids: new, no probe) */
        size_t mask = t->n_buckets - 1, at = (size_t)h & mask;
        while ((e = t->buckets[at]) >= 0 && t->entries[e].value != value) at = (at + 1) & mask;
    }
    if (e < 0) {
        if ((e = hash_add(t, (DenseEntry){value, 0, 0, 0, h})) < 0) return -1;
        if (e == 0 || value > t->max_value) t->max_value = value;
    }
    t->has_last = 1;
    t->last_value = value;
    t->last_code = e;
    return e;
}

/* The provisional code of the string strings[offset : offset + length], told apart by its
 * bytes; -1 when out of memory. */
static int32_t hash_string_code(DenseHash *t, const uint8_t *strings, int64_t n_strings,
                                int64_t offset, int32_t length) {
    const uint8_t *p = strings + offset;
    int64_t key = length <= 8 ? short_key(p, length, n_strings - offset) : 0;
    if (length <= 8 && t->has_last && t->last_value == key && t->last_length == length)
        return t->last_code;
    uint64_t h = length <= 8 ? mix64((uint64_t)key ^ ((uint64_t)length << 59))
                             : bytes_hash(p, length);
    int32_t e = -1;
    if (t->n_buckets) {
        size_t mask = t->n_buckets - 1, at = (size_t)h & mask;
        while ((e = t->buckets[at]) >= 0) {
            DenseEntry *d = &t->entries[e];
            if (d->hash == h && d->length == length &&
                (length <= 8 ? d->key == key
                             : memcmp(strings + d->value, p, (size_t)length) == 0))
                break;
            at = (at + 1) & mask;
        }
    }
    if (e < 0 && (e = hash_add(t, (DenseEntry){offset, key, length, 0, h})) < 0) return -1;
    if (length <= 8) {
        t->has_last = 1;
        t->last_value = key;
        t->last_length = length;
        t->last_code = e;
    }
    return e;
}

static int cmp_int_entry(const void *a, const void *b) {
    int64_t x = ((const DenseEntry *)a)->value, y = ((const DenseEntry *)b)->value;
    return (x > y) - (x < y);
}

/* numpy's order of one stat's distinct strings: by length, then (at most 8 bytes) by the
 * zero-padded bytes read as a uint64, else by the bytes (a void record's order). Entries of
 * strings longer than 8 hold their start address in `key` while sorted. */
static int cmp_string_entry(const void *a, const void *b) {
    const DenseEntry *x = a, *y = b;
    if (x->length != y->length) return x->length < y->length ? -1 : 1;
    if (x->length <= 8) {
        uint64_t u = (uint64_t)x->key, v = (uint64_t)y->key;
        return (u > v) - (u < v);
    }
    return memcmp((const uint8_t *)(intptr_t)x->key, (const uint8_t *)(intptr_t)y->key,
                  (size_t)x->length);
}

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

static void dense_free(DensePlan *d) {
    for (int s = 0; s < DENSE_MAX_STATS; s++) {
        DenseStat *t = &d->st[s];
        free(t->provisional); free(t->present); free(t->tmp); hash_free(&t->hash);
        free(t->table); free(t->table_len); free(t->codes);
    }
    free(d->rank);
    free(d->kept);
}

static void dense_settle(DensePlan *d, int k, const uint8_t *kind0, const int64_t *count,
                         const int64_t *vmin, const int64_t *vmax, uint64_t mixed,
                         const uint8_t *first_pairs);

/* Pass one: ranks (first sight), checks, pairs and each stat's value range. 0: a line not
 * handled here (or out of memory). Inlined once per width of the ids (a constant here). */
static inline __attribute__((always_inline)) int dense_pass_of(DensePlan *d, int id_size) {
    const int32_t *ids32 = d->ids;
    const int64_t *ids64 = d->ids;
#define DENSE_ID(i) (id_size == 4 ? (int64_t)ids32[i] : ids64[i])
    const int32_t *rows = d->row;
    /* Rows in event order (each event's stats together, as every decoder writes them) and
     * within the line; else the numpy path does the line. */
    int sorted = rows[0] >= 0 && rows[d->m - 1] < d->num_rows;
    for (Py_ssize_t i = 1; i < d->m; i++) sorted &= rows[i] >= rows[i - 1];
    if (!sorted) return 0;
    uint8_t *slot = malloc(DENSE_ID_SLOTS);
    if (!slot) { d->no_memory = 1; return 0; }
    memset(slot, DENSE_NO_STAT, DENSE_ID_SLOTS);
    uint8_t first_pairs[DENSE_MAX_STATS * DENSE_MAX_STATS + 1];
    memset(first_pairs, 0, sizeof first_pairs);
    uint8_t kind0[DENSE_MAX_STATS];
    int64_t count[DENSE_MAX_STATS], vmin[DENSE_MAX_STATS], vmax[DENSE_MAX_STATS];
    const uint8_t *kinds = d->kind;
    const int64_t *values = d->value;
    uint8_t *rank = d->rank;
    int k = 0, ok = 1;
    /* Neighbours on one event mark their pair (else a spare byte): a stat twice in a row on
     * an event marks (s, s). (Twice with others between, (4, 2, 3, 4), no one order of the
     * stats gives the event back: the line keeps its rows whatever each stat's verdict.) A
     * stat of another kind than its first row's: a bit of `mixed`. */
    uint64_t mixed = 0;
    int32_t previous_row = -1;
    int previous = 0;
    for (Py_ssize_t i = 0; i < d->m; i++) {
        uint64_t at = (uint64_t)DENSE_ID(i);
        if (at >= DENSE_ID_SLOTS) { ok = 0; break; }  /* (negative ids too) */
        int s = slot[at];
        if (s == DENSE_NO_STAT) {
            if (k == DENSE_MAX_STATS) { ok = 0; break; }
            s = k++;
            slot[at] = (uint8_t)s;
            d->st[s].first_seen = i;
            d->stat_ids[s] = DENSE_ID(i);
            kind0[s] = kinds[i];
            mixed |= (uint64_t)(kinds[i] == 0) << s;  /* NONE: never dense */
            count[s] = 0;
            vmin[s] = INT64_MAX;
            vmax[s] = INT64_MIN;
        }
        /* (loads first, the byte stores last: a byte store may alias any later load) */
        int32_t r = rows[i];
        int64_t v = values[i], low = vmin[s], high = vmax[s], n = count[s];
        int other_kind = kinds[i] != kind0[s];
        int same = r == previous_row;
        mixed |= (uint64_t)other_kind << s;
        vmin[s] = v < low ? v : low;
        vmax[s] = v > high ? v : high;
        count[s] = n + 1;
        first_pairs[same ? previous * DENSE_MAX_STATS + s : DENSE_MAX_STATS * DENSE_MAX_STATS] = 1;
        rank[i] = (uint8_t)s;
        previous_row = r;
        previous = s;
    }
#undef DENSE_ID
    free(slot);
    if (!ok) return 0;
    dense_settle(d, k, kind0, count, vmin, vmax, mixed, first_pairs);
    return 1;
}

/* Pass one's verdicts: each stat's kind, checks, count and range, the sorted ranks and the
 * pairs by sorted rank. */
static void dense_settle(DensePlan *d, int k, const uint8_t *kind0, const int64_t *count,
                         const int64_t *vmin, const int64_t *vmax, uint64_t mixed,
                         const uint8_t *first_pairs) {
    d->k = k;
    for (int s = 0; s < k; s++) {
        DenseStat *t = &d->st[s];
        t->kind = kind0[s];
        t->bad = (int)((mixed >> s) & 1) | first_pairs[s * DENSE_MAX_STATS + s];
        t->count = count[s];
        t->vmin = vmin[s];
        t->vmax = vmax[s];
    }
    /* Sorted ranks: the stat ids in increasing order (k <= 64: an insertion sort). */
    uint8_t by_id[DENSE_MAX_STATS];
    for (int s = 0; s < k; s++) {
        int at = s;
        while (at > 0 && d->stat_ids[by_id[at - 1]] > d->stat_ids[s]) {
            by_id[at] = by_id[at - 1];
            at--;
        }
        by_id[at] = (uint8_t)s;
    }
    for (int j = 0; j < k; j++) d->order[by_id[j]] = (uint8_t)j;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++)
            d->pairs[d->order[a] * k + d->order[b]] = first_pairs[a * DENSE_MAX_STATS + b];
}

static int dense_pass(DensePlan *d) {
    return d->id_size == 4 ? dense_pass_of(d, 4) : dense_pass_of(d, 8);
}

/* What pass two does with each stat's rows. A range-coded stat's row: the provisional code
 * (the value's offset in its range, + 1) written as 4 bytes at event r of the stat's codes of
 * 1, 2 or 4 bytes (`shift` 0, 1, 2: the bytes past a narrow code are zero, "absent", and its
 * later events are written after it, a stat that may be dense having at most one row an
 * event, in event order; 3 bytes of room past the end), its offset marked in `present`, no
 * branch on its width. A hash-coded stat's row (`slow`): `dense_slow_row`. Other stats'
 * rows (`idle`) are passed over, their positions noted where they stay sparse (`keep`). */
typedef struct {
    int64_t base[DENSE_MAX_STATS];
    uint8_t *present[DENSE_MAX_STATS], *out[DENSE_MAX_STATS];
    uint8_t shift[DENSE_MAX_STATS], slow[DENSE_MAX_STATS], idle[DENSE_MAX_STATS];
    uint8_t keep[DENSE_MAX_STATS];
} DenseLanes;

static int dense_width(int64_t n_table) {
    return n_table <= 0xFF ? 1 : n_table <= 0xFFFF ? 2 : 4;
}

/* How each stat is coded and where pass two writes it; 0 when memory ran out. */
static int dense_prepare(DensePlan *d, DenseLanes *lanes) {
    int64_t n = d->num_rows;
    if (d->kept_positions) {  /* (the row walk's: only the pages written are touched) */
        d->kept = malloc((size_t)d->m * 8);
        if (!d->kept) return 0;
    }
    for (int s = 0; s < d->k; s++) {
        DenseStat *t = &d->st[s];
        lanes->slow[s] = 0;
        lanes->keep[s] = 1;
        lanes->idle[s] = 1;
        t->method = CODE_NONE;
        if (t->bad || t->count < d->min_count || t->count > n) continue;
        lanes->keep[s] = 0;
        int text = t->kind == 4 || t->kind == 5;
        if (!text && t->vmin == t->vmax && t->count == n) {  /* one value on every event */
            t->n_table = 2;
            t->table = malloc(2 * 8);
            t->table_len = calloc(2, 4);
            if (!t->table || !t->table_len) return 0;
            t->table[0] = 0;
            t->table[1] = t->vmin;
            t->width = 0;
            continue;
        }
        uint64_t last = (uint64_t)t->vmax - (uint64_t)t->vmin;  /* (span - 1: no wrap) */
        if (!text && last < (uint64_t)(2 * t->count + 1024) && last < INT32_MAX - 1) {
            uint64_t span = last + 1;
            t->method = CODE_RANGE;
            lanes->idle[s] = 0;
            t->provisional_width = span <= 0xFE ? 1 : span <= 0xFFFE ? 2 : 4;
            t->provisional = calloc((size_t)n * (size_t)t->provisional_width + 3, 1);
            t->present = calloc((size_t)span, 1);
            if (!t->provisional || !t->present) return 0;
            lanes->base[s] = t->vmin;
            lanes->present[s] = t->present;
            lanes->out[s] = t->provisional;
            lanes->shift[s] = (uint8_t)(t->provisional_width == 1 ? 0
                                        : t->provisional_width == 2 ? 1 : 2);
            continue;
        }
        t->method = text ? CODE_STRING : CODE_HASH;
        lanes->idle[s] = 0;
        lanes->slow[s] = 1;
        t->tmp = malloc((size_t)n * sizeof(int32_t));
        if (!t->tmp) return 0;
        memset(t->tmp, 0xFF, (size_t)n * sizeof(int32_t));
    }
    return 1;
}

/* A hash-coded row: its value's code (a string's: by its bytes) at its event. 1 done, 0 out
 * of memory, -1 a string not handled here (told apart by offset in numpy). */
static int dense_slow_row(DensePlan *d, DenseStat *t, int32_t r, int64_t v, int64_t length) {
    int32_t code;
    if (t->method == CODE_HASH) {
        code = hash_int_code(&t->hash, v);
    } else {
        t->string_bytes += length;
        if (length > DENSE_LONG_STRING || v < 0 || length < 0 || v > d->n_strings - length ||
            t->string_bytes > DENSE_MAX_STRING_BYTES)
            return -1;
        code = hash_string_code(&t->hash, d->strings, d->n_strings, v, (int32_t)length);
    }
    if (code < 0) return 0;
    t->tmp[r] = code;
    return 1;
}

/* Pass two: each candidate row's provisional code at its event. 1 done, else as above. */
static int dense_second_pass(DensePlan *d, DenseLanes *lanes) {
    const uint8_t *rank = d->rank;
    const int32_t *rows = d->row;
    const int64_t *values = d->value;
    int64_t *kept = d->kept;
    Py_ssize_t n_kept = 0;
    for (Py_ssize_t i = 0; i < d->m; i++) {
        int s = rank[i];
        int32_t r = rows[i];
        int64_t v = values[i];
        if (lanes->idle[s]) {
            kept[n_kept] = i;  /* (kept only when its stat is not a candidate) */
            n_kept += lanes->keep[s];
            continue;
        }
        if (lanes->slow[s]) {
            int64_t length = d->length_size == 1 ? ((const uint8_t *)d->length)[i]
                           : d->length_size == 2 ? ((const uint16_t *)d->length)[i]
                           : ((const int32_t *)d->length)[i];
            int done = dense_slow_row(d, &d->st[s], r, v, length);
            if (done <= 0) return done;
            continue;
        }
        /* (loads first, the byte stores last: a byte store may alias any later load) */
        uint64_t offset = (uint64_t)v - (uint64_t)lanes->base[s];
        uint8_t *present = lanes->present[s];
        uint8_t *out = lanes->out[s] + ((size_t)r << lanes->shift[s]);
        uint32_t code = (uint32_t)(offset + 1);
        memcpy(out, &code, 4);
        present[offset] = 1;
    }
    d->n_kept = n_kept;
    return 1;
}

/* A range-coded stat's table (its marked values in order) and its codes: each provisional
 * code replaced by its value's rank + 1 through a table of the range, narrowed to the
 * table's width (in place where the widths agree). */
static int dense_finish_range(DensePlan *d, DenseStat *t) {
    size_t span = (size_t)((uint64_t)t->vmax - (uint64_t)t->vmin) + 1;
    int64_t distinct = 0;
    for (size_t v = 0; v < span; v++) distinct += t->present[v];
    t->n_table = distinct + 1;
    t->table = malloc((size_t)t->n_table * 8);
    t->table_len = calloc((size_t)t->n_table, 4);
    if (!t->table || !t->table_len) return 0;
    t->table[0] = 0;
    int64_t n = d->num_rows;
    int width = t->n_table == 2 && t->count == n ? 0 : dense_width(t->n_table);
    /* provisional -> final code, in the codes' own width (a narrow table stays in cache) */
    void *lut = malloc((span + 1) * (size_t)(width ? width : 1));
    if (!lut) return 0;
#define DENSE_LUT(TYPE) do {                                                               \
        TYPE *to = lut;                                                                    \
        TYPE code = 0;                                                                     \
        to[0] = 0;                                                                         \
        for (size_t v = 0; v < span; v++) {                                                \
            code = (TYPE)(code + t->present[v]);                                           \
            to[v + 1] = t->present[v] ? code : 0;                                          \
            if (t->present[v]) t->table[(size_t)code] = t->vmin + (int64_t)v;              \
        }                                                                                  \
    } while (0)
    if (width <= 1) DENSE_LUT(uint8_t);
    else if (width == 2) DENSE_LUT(uint16_t);
    else DENSE_LUT(int32_t);
#undef DENSE_LUT
    t->width = width;
    if (width == 0) {
        free(lut);
        return 1;
    }
    if (t->width == t->provisional_width) {
        t->codes = t->provisional;
        t->provisional = NULL;
    } else {
        t->codes = malloc((size_t)n * (size_t)t->width);
        if (!t->codes) { free(lut); return 0; }
    }
#define DENSE_REMAP(IN, OUT) do {                                                          \
        const IN *in = t->provisional ? t->provisional : t->codes;                         \
        OUT *out = t->codes;                                                               \
        const OUT *to = lut;                                                               \
        for (int64_t e = 0; e < n; e++) out[e] = to[in[e]];                                \
    } while (0)
    int pw = t->provisional_width, fw = t->width;
    if (pw == 1) DENSE_REMAP(uint8_t, uint8_t);
    else if (pw == 2 && fw == 1) DENSE_REMAP(uint16_t, uint8_t);
    else if (pw == 2) DENSE_REMAP(uint16_t, uint16_t);
    else if (fw == 1) DENSE_REMAP(int32_t, uint8_t);
    else if (fw == 2) DENSE_REMAP(int32_t, uint16_t);
    else DENSE_REMAP(int32_t, int32_t);
#undef DENSE_REMAP
    free(lut);
    return 1;
}

/* A hash-coded stat's table, sorted as numpy sorts its values (strings: by length, then by
 * their bytes), and its codes: each event's hash code replaced by its value's rank + 1. */
static int dense_finish_hash(DensePlan *d, DenseStat *t) {
    int text = t->method == CODE_STRING;
    DenseHash *h = &t->hash;
    size_t distinct = h->n_entries;
    if (text)
        for (size_t e = 0; e < distinct; e++)
            if (h->entries[e].length > 8)
                h->entries[e].key = (int64_t)(intptr_t)(d->strings + h->entries[e].value);
    int (*cmp)(const void *, const void *) = text ? cmp_string_entry : cmp_int_entry;
    size_t ordered = 1;  /* entries already in order (ids seen increasing): no sort */
    while (ordered < distinct && cmp(&h->entries[ordered - 1], &h->entries[ordered]) < 0)
        ordered++;
    if (ordered < distinct) qsort(h->entries, distinct, sizeof(DenseEntry), cmp);
    int32_t *final_of = malloc((distinct + 1) * sizeof(int32_t));  /* hash code + 1 -> code */
    t->n_table = (int64_t)distinct + 1;
    t->table = malloc((size_t)t->n_table * 8);
    t->table_len = calloc((size_t)t->n_table, 4);
    if (!final_of || !t->table || !t->table_len) { free(final_of); return 0; }
    t->table[0] = 0;
    final_of[0] = 0;
    for (size_t j = 0; j < distinct; j++) {
        final_of[h->entries[j].code + 1] = (int32_t)j + 1;
        t->table[1 + j] = h->entries[j].value;
        t->table_len[1 + j] = text ? h->entries[j].length : 0;
    }
    int64_t n = d->num_rows;
    if (t->n_table == 2 && t->count == n) {
        t->width = 0;
        free(final_of);
        return 1;
    }
    t->width = dense_width(t->n_table);
    t->codes = malloc((size_t)n * (size_t)t->width);
    if (!t->codes) { free(final_of); return 0; }
    const int32_t *tmp = t->tmp;
    if (t->width == 1) {
        uint8_t *out = t->codes;
        for (int64_t e = 0; e < n; e++) out[e] = (uint8_t)final_of[tmp[e] + 1];
    } else if (t->width == 2) {
        uint16_t *out = t->codes;
        for (int64_t e = 0; e < n; e++) out[e] = (uint16_t)final_of[tmp[e] + 1];
    } else {
        int32_t *out = t->codes;
        for (int64_t e = 0; e < n; e++) out[e] = final_of[tmp[e] + 1];
    }
    free(final_of);
    return 1;
}

static int dense_run(DensePlan *d) {
    if (!dense_pass(d)) return 0;
    DenseLanes *lanes = calloc(1, sizeof *lanes);
    int done = lanes && dense_prepare(d, lanes) ? dense_second_pass(d, lanes) : 0;
    free(lanes);
    for (int s = 0; s < d->k && done == 1; s++) {
        DenseStat *t = &d->st[s];
        if (t->method == CODE_RANGE) done = dense_finish_range(d, t);
        else if (t->method != CODE_NONE) done = dense_finish_hash(d, t);
    }
    if (done == 1) return 1;
    d->no_memory = done == 0;
    return 0;
}

/* A malloc'd array handed to Python as a Block (NULL data: an empty one). */
static PyObject *block_from(void *data, Py_ssize_t bytes) {
    Col c = {data, 1, (size_t)bytes};
    return block_of(&c, bytes);
}

/* The plan's stat ids, first rows, pairs and sorted ranks (each by sorted rank, as bytes) and
 * its stats by sorted rank: None or (count, kind, table, table_lengths, codes or None,
 * width), their arrays handed over as Blocks. New references in out[0..4]; 0 on failure
 * (the caller drops what was made). */
static int dense_outputs(DensePlan *d, Py_ssize_t num_rows, PyObject **out) {
    int k = d->k;
    out[0] = PyBytes_FromStringAndSize(NULL, k * 8);
    out[1] = PyBytes_FromStringAndSize(NULL, k * 8);
    out[2] = PyBytes_FromStringAndSize((const char *)d->pairs, k * k);
    out[3] = PyBytes_FromStringAndSize((const char *)d->order, k);
    out[4] = PyList_New(k);
    if (!out[0] || !out[1] || !out[2] || !out[3] || !out[4]) return 0;
    for (int s = 0; s < k; s++) {
        int j = d->order[s];
        DenseStat *t = &d->st[s];
        ((int64_t *)PyBytes_AS_STRING(out[0]))[j] = d->stat_ids[s];
        ((int64_t *)PyBytes_AS_STRING(out[1]))[j] = t->first_seen;
        PyObject *item;
        if (!t->n_table) {
            item = Py_NewRef(Py_None);
        } else {
            PyObject *table = block_from(t->table, t->n_table * 8);
            t->table = NULL;
            PyObject *lens = table ? block_from(t->table_len, t->n_table * 4) : NULL;
            t->table_len = NULL;
            PyObject *codes = !lens ? NULL : t->codes ? block_from(t->codes, num_rows * t->width)
                                                      : Py_NewRef(Py_None);
            t->codes = NULL;
            item = codes ? Py_BuildValue("LiNNNi", (long long)t->count, t->kind, table, lens,
                                         codes, t->width) : NULL;
            if (!codes) { Py_XDECREF(table); Py_XDECREF(lens); }
        }
        if (!item) return 0;
        PyList_SET_ITEM(out[4], j, item);
    }
    return 1;
}

static PyObject *dense_plan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer row, ids, kind, value, length, strings;
    int id_size, length_size;
    Py_ssize_t num_rows, min_count;
    if (!PyArg_ParseTuple(args, "y*y*iy*y*y*iy*nn", &row, &ids, &id_size, &kind, &value,
                          &length, &length_size, &strings, &num_rows, &min_count))
        return NULL;
    DensePlan *d = calloc(1, sizeof *d);
    PyObject *result = NULL;
    Py_ssize_t m = row.len / 4;
    int sizes_ok = (id_size == 4 || id_size == 8) &&
                   (length_size == 1 || length_size == 2 || length_size == 4) &&
                   ids.len == m * id_size && kind.len == m && value.len == m * 8 &&
                   length.len == m * length_size && m > 0 && num_rows > 0;
    if (!d) { PyErr_NoMemory(); goto done; }
    if (!sizes_ok) {
        PyErr_SetString(PyExc_ValueError, "stat columns of unequal lengths or odd widths");
        goto done;
    }
    *d = (DensePlan){.row = row.buf, .ids = ids.buf, .kind = kind.buf, .value = value.buf,
                     .length = length.buf, .strings = strings.buf, .m = m,
                     .num_rows = num_rows, .n_strings = strings.len, .min_count = min_count,
                     .id_size = id_size,
                     .length_size = length_size, .kept_positions = 1};
    d->rank = malloc((size_t)m);
    if (!d->rank) { PyErr_NoMemory(); goto done; }
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = dense_run(d);
    Py_END_ALLOW_THREADS
    if (!ok) {
        if (d->no_memory) PyErr_NoMemory();
        else result = Py_NewRef(Py_None);
        goto done;
    }
    /* (stat_ids, first_seen, pairs, rank, sorted_rank, kept (int64 positions of the rows of
     *  the stats that are not candidates), stats by sorted rank: None or
     *  (count, kind, table, table_lengths, codes or None, width)) */
    PyObject *parts[5] = {NULL}, *rank = NULL, *kept = NULL;
    if (!dense_outputs(d, num_rows, parts)) goto fail;
    rank = block_from(d->rank, m);
    d->rank = NULL;
    kept = rank ? block_from(d->kept, d->n_kept * 8) : NULL;
    d->kept = NULL;
    if (!kept) goto fail;
    result = Py_BuildValue("NNNNNNN", parts[0], parts[1], parts[2], rank, parts[3], kept,
                           parts[4]);
    goto done;
fail:
    for (int j = 0; j < 5; j++) Py_XDECREF(parts[j]);
    Py_XDECREF(rank); Py_XDECREF(kept);
done:
    if (d) {
        dense_free(d);
        free(d);
    }
    PyBuffer_Release(&row); PyBuffer_Release(&ids); PyBuffer_Release(&kind);
    PyBuffer_Release(&value); PyBuffer_Release(&length); PyBuffer_Release(&strings);
    return result;
}

/* rows_except(rank, dropped) -> int64 positions of the rows whose rank (uint8) is not marked
 * in `dropped` (uint8 per rank): the rows a line keeps sparse. */
static PyObject *rows_except(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer rank, dropped;
    if (!PyArg_ParseTuple(args, "y*y*", &rank, &dropped)) return NULL;
    const uint8_t *r = rank.buf;
    uint8_t drop[256];
    memset(drop, 1, sizeof drop);
    memcpy(drop, dropped.buf, dropped.len < 256 ? (size_t)dropped.len : 256);
    Py_ssize_t m = rank.len, count = 0;
    int64_t *out = malloc((size_t)(m ? m : 1) * 8);
    if (out) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < m; i++) {
            out[count] = i;
            count += !drop[r[i]];
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&rank);
    PyBuffer_Release(&dropped);
    if (!out) return PyErr_NoMemory();
    return block_from(out, count * 8);
}

/* ---- A line walked straight into dense stats (`decode_line_dense`) -------------------------
 *
 * decode_line_dense(buf, row_bytes, slot_bytes) gives what decode_line and dense_plan give
 * together, without a column per stat row: a device line's sparse rows (18 bytes each, 13M
 * on an 8-GPU capture's kernel line of 1M events, with the line's 123 MB of bytes held as
 * well) were its decode's peak. It walks the line's bytes twice: once for the events' columns
 * and what dense_plan's pass one learns of each stat row (its checks, value range,
 * neighbours), once for pass two's codes (strings told apart where they stand in buf) and the
 * rows that stay sparse, or may (a stat that cannot be dense, or whose codes might cost more
 * than its rows: `_worth_dense` in dense_stats.py, with its costs `row_bytes` and
 * `slot_bytes`, bounded by its rows or its range of values: `line_may_keep`); those that
 * turned out dense are dropped from the rows after. An integer stat with so many distinct
 * values that it cannot be dense is no longer hashed (`line_hopeless`). Reading the bytes is
 * most of a walk's cost: a host thread's line of a stat or so an event (TF CPU threads:
 * half its rows sparse, a per-event id among them) took three walks and a sort of its ids,
 * 2.4x the row walk; now 1.3-1.5x. A line dense_plan would not do (more than 64 stat ids,
 * ids past 65535, long strings), or a malformed one, gives None: the decoder then walks it
 * with decode_line. */

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

/* Pass one's view of a stat row (dense_pass_of's loop, a row at a time). */
static int line_see(LinePlan *p, int32_t r, int64_t id, uint8_t kind, int64_t v,
                    int32_t length) {
    DensePlan *d = &p->d;
    if ((uint64_t)id >= DENSE_ID_SLOTS) { p->bail = 1; return 0; }  /* (negative ids too) */
    int s = p->slot[id];
    if (s == DENSE_NO_STAT) {
        if (d->k == DENSE_MAX_STATS) { p->bail = 1; return 0; }
        s = d->k++;
        p->slot[id] = (uint8_t)s;
        d->st[s].first_seen = p->rows;
        d->stat_ids[s] = id;
        p->kind0[s] = kind;
        p->mixed |= (uint64_t)(kind == 0) << s;  /* NONE: never dense */
        p->count[s] = 0;
        p->vmin[s] = INT64_MAX;
        p->vmax[s] = INT64_MIN;
    }
    p->mixed |= (uint64_t)(kind != p->kind0[s]) << s;
    if (v < p->vmin[s]) p->vmin[s] = v;
    if (v > p->vmax[s]) p->vmax[s] = v;
    p->count[s]++;
    p->first_pairs[r == p->previous_row ? p->previous * DENSE_MAX_STATS + s
                                        : DENSE_MAX_STATS * DENSE_MAX_STATS] = 1;
    p->previous_row = r;
    p->previous = s;
    if (length > p->longest) p->longest = length;
    p->rows++;
    return 1;
}

/* Whether `count` rows of a stat cost at most its codes and table of `n_table` slots, were
 * the codes of `dense_width(n_table)` bytes (at least theirs when `n_table` > 2): the stat
 * cannot be worth a dense column (`_worth_dense`) once it has that many distinct values. */
static int line_not_worth(const LinePlan *p, int64_t count, int64_t n_table) {
    return count * p->row_bytes <=
           (int64_t)dense_width(n_table) * p->d.num_rows + n_table * p->slot_bytes;
}

/* An integer hash-coded stat with so many distinct values already (two or more) that it
 * stays sparse whatever the rest of its rows hold (a host thread's per-event ids: 120k
 * distinct of 120k rows), so that hashing the rest and sorting its table are not done. */
static int line_hopeless(const LinePlan *p, const DenseStat *t) {
    int64_t distinct = (int64_t)t->hash.n_entries;
    return distinct >= 2 && line_not_worth(p, t->count, distinct + 1);
}

/* Stops coding stat `s`: it stays sparse (no table: `line_decide` keeps its rows, which
 * pass two writes already: a stat that may stay sparse is `line_may_keep`'s). */
static void line_give_up(LinePlan *p, int s) {
    DenseStat *t = &p->d.st[s];
    free(t->tmp);
    t->tmp = NULL;
    hash_free(&t->hash);
    memset(&t->hash, 0, sizeof t->hash);
    t->method = CODE_NONE;
    p->lanes.slow[s] = 0;
    p->lanes.idle[s] = 1;
}

/* Pass two's coding of a stat row (dense_second_pass's loop body). */
static int line_code(Columns *cols, LinePlan *p, int32_t r, int64_t id, int64_t v,
                     int32_t length) {
    DenseLanes *lanes = &p->lanes;
    int s = p->slot[id];  /* (every id below DENSE_ID_SLOTS: pass one saw to it) */
    if (lanes->idle[s]) return 1;
    if (lanes->slow[s]) {
        DenseStat *t = &p->d.st[s];
        int done = dense_slow_row(&p->d, t, r, v, length);
        if (done < 0) p->bail = 1;
        if (done == 0) cols->no_memory = 1;
        if (done == 1 && t->method == CODE_HASH && line_hopeless(p, t)) line_give_up(p, s);
        return done == 1;
    }
    uint64_t offset = (uint64_t)v - (uint64_t)lanes->base[s];
    uint32_t code = (uint32_t)(offset + 1);
    memcpy(lanes->out[s] + ((size_t)r << lanes->shift[s]), &code, 4);
    lanes->present[s][offset] = 1;
    return 1;
}

/* A row that stays (or may stay) sparse, written (room for every such row was made first). */
static int line_put(LinePlan *p, int32_t r, int64_t id, uint8_t kind, int64_t v,
                    int32_t length) {
    Py_ssize_t k = p->n_kept++;
    ((int32_t *)p->k_row.data)[k] = r;
    ((int32_t *)p->k_meta.data)[k] = (int32_t)id;
    ((uint8_t *)p->k_kind.data)[k] = kind;
    ((int64_t *)p->k_value.data)[k] = v;
    if (p->k_length.item == 1) ((uint8_t *)p->k_length.data)[k] = (uint8_t)length;
    else if (p->k_length.item == 2) ((uint16_t *)p->k_length.data)[k] = (uint16_t)length;
    else ((int32_t *)p->k_length.data)[k] = length;
    return 1;
}

static int line_row(Columns *cols, int32_t event_index, int64_t meta, uint8_t kind,
                    int64_t value, int32_t length) {
    LinePlan *p = cols->line;
    if (cols->mode == WALK_SEE) return line_see(p, event_index, meta, kind, value, length);
    if (cols->mode == WALK_CODE) {
        if (!line_code(cols, p, event_index, meta, value, length)) return 0;
        return p->write[p->slot[meta]] ? line_put(p, event_index, meta, kind, value, length)
                                       : 1;
    }
    return p->keep[p->slot[meta]] ? line_put(p, event_index, meta, kind, value, length) : 1;
}

/* Which stats' rows stay sparse (not candidates, or candidates whose codes and table cost
 * more than their rows), and how many rows that is. */
static Py_ssize_t line_decide(LinePlan *p, int64_t row_bytes, int64_t slot_bytes) {
    DensePlan *d = &p->d;
    Py_ssize_t kept = 0;
    for (int s = 0; s < d->k; s++) {
        DenseStat *t = &d->st[s];
        int worth = t->n_table > 0 &&
                    t->count * row_bytes > (int64_t)t->width * d->num_rows +
                                           t->n_table * slot_bytes;
        p->keep[s] = (uint8_t)!worth;
        kept += worth ? 0 : t->count;
    }
    return kept;
}

/* Which stats' rows pass two writes (`write`), and how many rows that is: every stat that
 * is no candidate, and every candidate that may yet cost more dense than as rows (its table
 * and code width bounded by its rows, or by its range of values). A candidate certain to be
 * dense writes none: the rows of a line whose stats are coded are never written. */
static Py_ssize_t line_may_keep(LinePlan *p) {
    DensePlan *d = &p->d;
    Py_ssize_t rows = 0;
    for (int s = 0; s < d->k; s++) {
        DenseStat *t = &d->st[s];
        int64_t most = t->count;  /* distinct values at most */
        if (t->method == CODE_RANGE) {
            uint64_t last = (uint64_t)t->vmax - (uint64_t)t->vmin;
            if (last < (uint64_t)most) most = (int64_t)last + 1;
        }
        int may_keep = p->lanes.keep[s] ||
                       (t->method == CODE_NONE
                            ? t->count * p->row_bytes <= t->n_table * p->slot_bytes
                            : line_not_worth(p, t->count, most + 1));
        p->write[s] = (uint8_t)may_keep;
        rows += may_keep ? t->count : 0;
    }
    return rows;
}

/* Room for `rows` sparse rows in the kept columns; 0 when memory ran out. */
static int line_reserve_kept(LinePlan *p, Py_ssize_t rows) {
    p->k_row.item = p->k_meta.item = 4;
    p->k_kind.item = 1;
    p->k_value.item = 8;
    return col_reserve(&p->k_row, rows) && col_reserve(&p->k_meta, rows) &&
           col_reserve(&p->k_kind, rows) && col_reserve(&p->k_value, rows) &&
           col_reserve(&p->k_length, rows);
}

/* The rows pass two wrote of stats that turned out dense dropped (in place, file order). */
static void line_compact(LinePlan *p) {
    const int32_t *meta = (const int32_t *)p->k_meta.data;
    Py_ssize_t to = 0;
    size_t width = p->k_length.item;
    for (Py_ssize_t k = 0; k < p->n_kept; k++) {
        if (!p->keep[p->slot[meta[k]]]) continue;
        ((int32_t *)p->k_row.data)[to] = ((int32_t *)p->k_row.data)[k];
        ((int32_t *)p->k_meta.data)[to] = meta[k];
        ((uint8_t *)p->k_kind.data)[to] = ((uint8_t *)p->k_kind.data)[k];
        ((int64_t *)p->k_value.data)[to] = ((int64_t *)p->k_value.data)[k];
        memmove(p->k_length.data + to * width, p->k_length.data + k * width, width);
        to++;
    }
    p->n_kept = to;
}

/* The walks: pass one (events, stat checks and ranges), pass two (codes, and the rows that
 * stay or may stay sparse: `line_may_keep`), the rows of stats that turned out dense dropped
 * from those; a third walk only where a stat pass two did not write stays sparse after all
 * (never, `line_may_keep` bounding every stat's costs; kept as the safe way). Two walks of
 * the bytes, not three: a host thread's line (a stat or so an event, half its rows sparse)
 * is bound by reading the bytes. 1: done; 0: a line left to decode_line; -1: out of memory. */
static int line_dense_run(const uint8_t *buf, Py_ssize_t size, Columns *cols, Header *h,
                          int64_t row_bytes, int64_t slot_bytes) {
    LinePlan *p = cols->line;
    DensePlan *d = &p->d;
    p->row_bytes = row_bytes;
    p->slot_bytes = slot_bytes;
    cols->mode = WALK_SEE;
    if (!walk_line(buf, size, cols, h)) return cols->no_memory ? -1 : 0;
    Py_ssize_t n = cols->n_events;
    if (p->rows == 0) return 1;  /* no stats: nothing to code */
    d->strings = buf;
    d->n_strings = size;
    d->m = p->rows;
    d->num_rows = n;
    d->min_count = (n + 2 * slot_bytes) / row_bytes + 1;  /* (`_min_dense_count`) */
    dense_settle(d, d->k, p->kind0, p->count, p->vmin, p->vmax, p->mixed, p->first_pairs);
    if (!dense_prepare(d, &p->lanes)) return -1;
    p->k_length.item = p->longest <= 0xFF ? 1 : p->longest <= 0xFFFF ? 2 : 4;
    Py_ssize_t may_keep = line_may_keep(p);
    if (may_keep && !line_reserve_kept(p, may_keep)) return -1;
    cols->mode = WALK_CODE;
    cols->n_events = 0;
    if (!walk_line(buf, size, cols, h)) return cols->no_memory ? -1 : 0;
    for (int s = 0; s < d->k; s++) {
        DenseStat *t = &d->st[s];
        int done = t->method == CODE_RANGE ? dense_finish_range(d, t)
                 : t->method != CODE_NONE ? dense_finish_hash(d, t) : 1;
        if (!done) return -1;
    }
    Py_ssize_t kept = line_decide(p, row_bytes, slot_bytes);
    int unwritten = 0, dropped = 0;
    for (int s = 0; s < d->k; s++) {
        unwritten |= p->keep[s] && !p->write[s];
        dropped |= p->write[s] && !p->keep[s];
    }
    if (!unwritten) {
        if (dropped) line_compact(p);
        return 1;
    }
    p->n_kept = 0;
    if (!line_reserve_kept(p, kept)) return -1;
    cols->mode = WALK_KEEP;
    cols->n_events = 0;
    if (!walk_line(buf, size, cols, h)) return cols->no_memory ? -1 : 0;
    return 1;
}

static void line_plan_free(LinePlan *p) {
    dense_free(&p->d);
    free(p->k_row.data); free(p->k_meta.data); free(p->k_kind.data); free(p->k_value.data);
    free(p->k_length.data);
    free(p);
}

/* The plan handed over: (stat_ids, first_seen, pairs, per_stat (dense_outputs), keep (uint8
 * by sorted rank: its rows stay sparse), and the sparse rows' row (int32), metadata_id
 * (int32), kind, value (int64) and length (uint8/uint16/int32 as the line's longest string
 * asks: `_narrowed_lengths`) columns, that length's width). */
static PyObject *line_plan_tuple(LinePlan *p) {
    DensePlan *d = &p->d;
    PyObject *parts[5] = {NULL}, *keep = NULL, *kept[5] = {NULL};
    if (!dense_outputs(d, d->num_rows, parts)) goto fail;
    keep = PyBytes_FromStringAndSize(NULL, d->k);
    if (!keep) goto fail;
    for (int s = 0; s < d->k; s++) PyBytes_AS_STRING(keep)[d->order[s]] = (char)p->keep[s];
    Col *cols[5] = {&p->k_row, &p->k_meta, &p->k_kind, &p->k_value, &p->k_length};
    for (int j = 0; j < 5; j++) {
        if (!(kept[j] = block_of(cols[j], p->n_kept))) goto fail;
    }
    return Py_BuildValue("NNNNNNNNNNi", parts[0], parts[1], parts[2], parts[4], keep, kept[0],
                         kept[1], kept[2], kept[3], kept[4], (int)p->k_length.item);
fail:
    for (int j = 0; j < 5; j++) { Py_XDECREF(parts[j]); Py_XDECREF(kept[j]); }
    Py_XDECREF(keep);
    return NULL;
}

static PyObject *decode_line_dense(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    long long row_bytes, slot_bytes;
    if (!PyArg_ParseTuple(args, "y*LL", &view, &row_bytes, &slot_bytes)) return NULL;
    if (row_bytes <= 0 || slot_bytes < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "row_bytes must be > 0, slot_bytes >= 0");
        return NULL;
    }
    Columns cols;
    memset(&cols, 0, sizeof cols);
    cols.offset.item = cols.duration.item = cols.occurrences.item = 8;
    cols.meta.item = 4;  /* (widened as needed) */
    LinePlan *p = calloc(1, sizeof *p);
    if (!p) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    memset(p->slot, DENSE_NO_STAT, sizeof p->slot);
    p->previous_row = -1;
    cols.line = p;
    Header h;
    memset(&h, 0, sizeof h);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = line_dense_run((const uint8_t *)view.buf, view.len, &cols, &h, row_bytes,
                            slot_bytes);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL, *out[4] = {NULL}, *name = NULL, *display = NULL, *plan = NULL;
    if (status <= 0) {
        if (status < 0) PyErr_NoMemory();
        else result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t n = cols.n_events;
    Col *source[4] = {&cols.meta, &cols.offset, &cols.duration, &cols.occurrences};
    for (int k = 0; k < 4; k++) {
        out[k] = k == 3 && !cols.has_occurrences ? Py_NewRef(Py_None) : block_of(source[k], n);
        if (!out[k]) goto done;
    }
    name = PyBytes_FromStringAndSize((const char *)h.name, h.name_len);
    display = name ? PyBytes_FromStringAndSize((const char *)h.display_name,
                                               h.display_name_len) : NULL;
    plan = !display ? NULL : p->rows ? line_plan_tuple(p) : Py_NewRef(Py_None);
    if (!plan) goto done;
    result = Py_BuildValue("LLNNLLNNNNinN", (long long)h.id, (long long)h.display_id, name,
                           display, (long long)h.timestamp_ns, (long long)h.duration_ps, out[0],
                           out[1], out[2], out[3], n ? (int)cols.meta.item : 8, p->rows, plan);
    name = display = plan = NULL;
    for (int k = 0; k < 4; k++) out[k] = NULL;
done:
    for (int k = 0; k < 4; k++) Py_XDECREF(out[k]);
    Py_XDECREF(name); Py_XDECREF(display); Py_XDECREF(plan);
    PyBuffer_Release(&view);
    free_columns(&cols);
    line_plan_free(p);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_line", decode_line, METH_VARARGS,
     "decode_line(buf) -> header fields and event/stat columns of one encoded XLine."},
    {"scan_fields", scan_fields, METH_VARARGS,
     "scan_fields(buf, start, end) -> int64 rows (field, wire_type, start, value_start, end)."},
    {"dense_plan", dense_plan, METH_VARARGS,
     "dense_plan(row, ids, id_size, kind, value, length, length_size, strings, num_rows, "
     "min_count) -> a line's stats ranked, checked and coded, or None "
     "(dense_stats.py)."},
    {"decode_line_dense", decode_line_dense, METH_VARARGS,
     "decode_line_dense(buf, row_bytes, slot_bytes) -> header fields, event columns, stat "
     "row count and the line's dense stats planned and coded, or None (decode_line's then)."},
    {"rows_except", rows_except, METH_VARARGS,
     "rows_except(rank, dropped) -> int64 positions of the rows whose rank is not dropped."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wire(void) {
    if (PyType_Ready(&BlockType) < 0) return NULL;
    return PyModule_Create(&module);
}
