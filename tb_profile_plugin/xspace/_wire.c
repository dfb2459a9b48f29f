/* Optional accelerator: decode one encoded XLine straight from its wire bytes into columns.
 *
 * decode_line(buf[, events_only]) walks the XLine message once, filling columns that
 * grow as needed (room for one event per 16 bytes of the line first, doubled by realloc,
 * which moves the pages of a large block without copying; pages never written are never
 * touched), each returned as a writable buffer owning its memory. Python wraps the columns
 * with numpy.frombuffer (no copy). It walked the line twice before, once to count: the
 * 20M-event capture's decode took 1.75 s, 1.1-1.4 s in one pass. (Huge pages, asked for with
 * madvise, made it slower and more variable on the VM measured: 1.3-3.2 s, first touches of
 * 2 MiB.) The pure-numpy decoder in wire_numpy.py computes the same columns and stays the
 * reference; tests check that both agree with protobuf's own parse.
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
 * With events_only true (positional), each event's stats are passed over by their length
 * (none is read or checked: the stat columns come back empty), a fifth to a sixth of the
 * whole walk's time on a GPU stream; the profile's stats are walked later
 * (xspace/stats_later.py).
 *
 * decode_line_dense (_wire_line_dense.c) walks a line the same way but codes its stats as it goes
 * (dense_plan's passes, a stat row at a time), writing rows only for the stats that stay
 * sparse: the decoder's first choice, decode_line where it declines a line.
 *
 * The sources, one idea each, share their types through _wire.h: this file (the module,
 * the Blocks that hand columns over, decode_line and scan_fields), _wire_walk.c (the walk
 * of a line's bytes: its events and stat rows into columns, or into decode_line_dense's
 * passes), _wire_dense_hash.c (the tables of a stat's distinct values),
 * _wire_dense_plan.c (dense_plan's passes over sparse rows, rows_except) and
 * _wire_line_dense.c (decode_line_dense: the walks that code a line's stats as they go).
 */
#include "_wire.h"

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
PyObject *wire_block_of(Col *c, Py_ssize_t count) {
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

/* A malloc'd array handed to Python as a Block (NULL data: an empty one). */
PyObject *wire_block_from(void *data, Py_ssize_t bytes) {
    Col c = {data, 1, (size_t)bytes};
    return wire_block_of(&c, bytes);
}

static PyObject *decode_line(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    int events_only = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &events_only)) return NULL;
    const uint8_t *buf = (const uint8_t *)view.buf;
    Columns cols;
    memset(&cols, 0, sizeof cols);
    cols.mode = events_only ? WALK_EVENTS : WALK_ROWS;
    cols.offset.item = cols.duration.item = cols.occurrences.item = cols.st_value.item = 8;
    cols.meta.item = cols.st_meta.item = cols.st_event.item = 4;  /* (ids: widened as needed) */
    cols.st_kind.item = cols.st_length.item = 1;                  /* (lengths: the same) */
    Header h;
    memset(&h, 0, sizeof h);
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = wire_walk_line(buf, view.len, &cols, &h);
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyBuffer_Release(&view);
        wire_free_columns(&cols);
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
        else out[k] = wire_block_of(source[k], k < 4 ? n : m);
        failed = out[k] == NULL;
    }
    if (!failed) {
        name = PyBytes_FromStringAndSize((const char *)h.name, h.name_len);
        display = name ? PyBytes_FromStringAndSize((const char *)h.display_name,
                                                   h.display_name_len) : NULL;
        failed = display == NULL;
    }
    PyBuffer_Release(&view);
    wire_free_columns(&cols);
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
            const uint8_t *end = value_end(&r);
            if (!end) { ok = 0; break; }
            value_start = r.p;
            r.p = end;
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

static PyMethodDef methods[] = {
    {"decode_line", decode_line, METH_VARARGS,
     "decode_line(buf[, events_only]) -> header fields and event/stat columns of one "
     "encoded XLine (events_only: no stat row)."},
    {"scan_fields", scan_fields, METH_VARARGS,
     "scan_fields(buf, start, end) -> int64 rows (field, wire_type, start, value_start, end)."},
    {"dense_plan", wire_dense_plan, METH_VARARGS,
     "dense_plan(row, ids, id_size, kind, value, length, length_size, strings, num_rows, "
     "min_count) -> a line's stats ranked, checked and coded, or None "
     "(dense_stats.py)."},
    {"decode_line_dense", wire_decode_line_dense, METH_VARARGS,
     "decode_line_dense(buf, row_bytes, slot_bytes) -> header fields, event columns, stat "
     "row count and the line's dense stats planned and coded, or None (decode_line's then)."},
    {"rows_except", wire_rows_except, METH_VARARGS,
     "rows_except(rank, dropped) -> int64 positions of the rows whose rank is not dropped."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wire(void) {
    if (PyType_Ready(&BlockType) < 0) return NULL;
    return PyModule_Create(&module);
}
