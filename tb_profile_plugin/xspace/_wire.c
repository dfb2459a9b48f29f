/* Optional accelerator: decode one encoded XLine straight from its wire bytes into columns.
 *
 * decode_line(buf) walks the XLine message once to count events and stats, allocates the
 * columns as bytes objects, and walks it again to fill them. Python wraps the columns with
 * numpy.frombuffer (no copy). The pure-numpy decoder in wire_numpy.py computes the same
 * columns and stays the reference; tests check that both agree with protobuf's own parse.
 *
 * Returned tuple (all integers little-endian, native width as named):
 *   id, display_id, name (bytes), display_name (bytes), timestamp_ns, duration_ps,
 *   (columns are bytearrays)
 *   event_metadata_id (int64[n]), event_offset_ps (int64[n]), event_duration_ps (int64[n]),
 *   event_num_occurrences (int64[n]) or None when no event is an aggregate,
 *   stat_event_index (int32[m]), stat_metadata_id (int64[m]), stat_kind (uint8[m]),
 *   stat_value (int64[m]: raw bits; for str/bytes the offset of the value in buf),
 *   stat_length (int32[m]: byte length of str/bytes values, else 0)
 * Stat kinds: 1 double, 2 uint64, 3 int64, 4 str, 5 bytes, 6 ref (see schema.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
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

typedef struct {
    int64_t *meta, *offset, *duration, *occurrences;
    int32_t *st_event, *st_length;
    int64_t *st_meta, *st_value;
    uint8_t *st_kind;
    Py_ssize_t n_events, n_stats, n_occurrences;
} Columns;

/* Decodes one XStat in [p, end); when cols->st_meta is NULL only counts. */
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
    if (cols->st_meta) {
        Py_ssize_t i = cols->n_stats;
        cols->st_event[i] = event_index; cols->st_meta[i] = meta; cols->st_kind[i] = kind;
        cols->st_value[i] = value; cols->st_length[i] = length;
    }
    cols->n_stats++;
    return 1;
}

/* Decodes one XEvent in [p, end); when cols->meta is NULL only counts. */
static int decode_event(Reader *outer, const uint8_t *p, const uint8_t *end, Columns *cols) {
    Reader r = {p, end, outer->base, 0};
    int64_t meta = 0, offset = 0, duration = 0, occurrences = 0;
    int32_t index = (int32_t)cols->n_events;
    while (r.p < r.end) {
        uint64_t tag = read_varint(&r);
        if (r.error) return 0;
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (wt == 0 && field == 1) meta = (int64_t)read_varint(&r);
        else if (wt == 0 && field == 2) { offset = (int64_t)read_varint(&r); occurrences = 0; }
        else if (wt == 0 && field == 3) duration = (int64_t)read_varint(&r);
        else if (wt == 0 && field == 5) { occurrences = (int64_t)read_varint(&r); offset = 0; }
        else if (wt == 2 && field == 4) {
            uint64_t n = read_varint(&r);
            if (r.error || n > (uint64_t)(r.end - r.p)) return 0;
            if (!decode_stat(&r, r.p, r.p + n, cols, index)) return 0;
            r.p += n;
        }
        else if (!skip_value(&r, wt)) return 0;
        if (r.error) return 0;
    }
    if (occurrences) cols->n_occurrences++;
    if (cols->meta) {
        cols->meta[index] = meta; cols->offset[index] = offset;
        cols->duration[index] = duration;
        if (cols->occurrences) cols->occurrences[index] = occurrences;
    }
    cols->n_events++;
    return 1;
}

typedef struct {
    int64_t id, display_id, timestamp_ns, duration_ps;
    const uint8_t *name, *display_name;
    Py_ssize_t name_len, display_name_len;
} Header;

static int walk_line(const uint8_t *buf, Py_ssize_t size, Columns *cols, Header *h) {
    Reader r = {buf, buf + size, buf, 0};
    cols->n_events = 0; cols->n_stats = 0; cols->n_occurrences = 0;
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

static PyObject *new_column(Py_ssize_t count, Py_ssize_t item_size, void **data) {
    /* bytearray, so that numpy views of the columns are writable (adjusted in place). */
    PyObject *obj = PyByteArray_FromStringAndSize(NULL, count * item_size);
    if (obj) *data = PyByteArray_AS_STRING(obj);
    return obj;
}

static PyObject *decode_line(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const uint8_t *buf = (const uint8_t *)view.buf;
    Columns cols;
    memset(&cols, 0, sizeof cols);
    Header h;
    memset(&h, 0, sizeof h);
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = walk_line(buf, view.len, &cols, &h);
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "malformed XLine: truncated or not protobuf");
        return NULL;
    }
    Py_ssize_t n = cols.n_events, m = cols.n_stats, n_occ = cols.n_occurrences;
    PyObject *o_meta, *o_offset, *o_dur, *o_occ = NULL, *o_sev, *o_smeta, *o_skind, *o_sval,
             *o_slen;
    o_meta = new_column(n, 8, (void **)&cols.meta);
    o_offset = new_column(n, 8, (void **)&cols.offset);
    o_dur = new_column(n, 8, (void **)&cols.duration);
    if (n_occ) o_occ = new_column(n, 8, (void **)&cols.occurrences);
    o_sev = new_column(m, 4, (void **)&cols.st_event);
    o_smeta = new_column(m, 8, (void **)&cols.st_meta);
    o_skind = new_column(m, 1, (void **)&cols.st_kind);
    o_sval = new_column(m, 8, (void **)&cols.st_value);
    o_slen = new_column(m, 4, (void **)&cols.st_length);
    if (!o_meta || !o_offset || !o_dur || (n_occ && !o_occ) || !o_sev || !o_smeta || !o_skind ||
        !o_sval || !o_slen) {
        Py_XDECREF(o_meta); Py_XDECREF(o_offset); Py_XDECREF(o_dur); Py_XDECREF(o_occ);
        Py_XDECREF(o_sev); Py_XDECREF(o_smeta); Py_XDECREF(o_skind); Py_XDECREF(o_sval);
        Py_XDECREF(o_slen);
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ok = walk_line(buf, view.len, &cols, &h);
    Py_END_ALLOW_THREADS
    PyObject *name = PyBytes_FromStringAndSize((const char *)h.name, h.name_len);
    PyObject *display = PyBytes_FromStringAndSize((const char *)h.display_name,
                                                  h.display_name_len);
    PyBuffer_Release(&view);
    if (!o_occ) { Py_INCREF(Py_None); o_occ = Py_None; }
    return Py_BuildValue("LLNNLLNNNNNNNNN", (long long)h.id, (long long)h.display_id, name,
                         display, (long long)h.timestamp_ns, (long long)h.duration_ps, o_meta,
                         o_offset, o_dur, o_occ, o_sev, o_smeta, o_skind, o_sval, o_slen);
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

static PyMethodDef methods[] = {
    {"decode_line", decode_line, METH_VARARGS,
     "decode_line(buf) -> header fields and event/stat columns of one encoded XLine."},
    {"scan_fields", scan_fields, METH_VARARGS,
     "scan_fields(buf, start, end) -> int64 rows (field, wire_type, start, value_start, end)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wire(void) { return PyModule_Create(&module); }
