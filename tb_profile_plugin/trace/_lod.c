/* Optional accelerator of the level of detail (trace/lod.py keeps the numpy version, the
 * reference that the tests compare this with, and the fallback when this is not built).
 *
 * first_at_least(values, lo, hi, offsets, keys, out[, end_keys, end_out])
 *   values:  int64[n], sorted ascending within each range [lo[r], hi[r]);
 *   lo, hi:  int64[k], the ranges (0 <= lo[r] <= hi[r] <= n);
 *   offsets: int64[k + 1], keys[offsets[r]:offsets[r + 1]] are range r's keys;
 *   keys:    int64[m];
 *   out:     writable int64[m]: per key, the first position p in [lo[r], hi[r]) with
 *            values[p] >= key, or hi[r]: lo[r] + numpy.searchsorted(values[lo[r]:hi[r]],
 *            key, "left");
 *   end_keys, end_out: the same for keys each at least its key's (a zone's end), found by
 *            walking forward from that key's answer (zones are a few ps wide).
 *
 * A window's pixel columns give each range ~1600 keys in ascending order whose answers are
 * about equally far apart (a column's events), so each search starts where the last step
 * predicts (the last answer plus the last distance) and gallops from there (1, 2, 4, ...
 * positions, forward or back, then a binary search inside the last step): a read or two
 * near the guess instead of ~17 reads all over the range, and the guess a few keys ahead is
 * prefetched, so that the reads of several keys overlap (numpy's searchsorted of a
 * 20M-event window's 180k keys cost 25-35 ms in cache misses). A key smaller than the one
 * before starts again from lo[r], so the answer never depends on the keys' order.
 * The GIL is released.
 *
 * breaks_in_blocks(start, end, blocks, part, lo, hi, pixel_ps, out, out_part) -> count
 *   start, end: int64[n], the index's event columns;
 *   blocks:  int64[b], ascending ids of blocks of 64 events (positions 64 * id ...) whose
 *            maximum of duration and gap says they may hold a break;
 *   part:    int64[b], the range each block is searched for (blocks of a range ascending,
 *            ranges ascending);
 *   lo, hi:  int64[k], the ranges;
 *   pixel_ps: the window's pixel (a float);
 *   out, out_part: writable int64[64 * b]: the positions p of those blocks inside their range
 *            whose event is at least a pixel wide, `(double)(end[p] - start[p]) >=
 *            pixel_ps`, or comes more than a pixel after the previous event of the range,
 *            `p > lo && !((double)start[p] <= (double)end[p - 1] + pixel_ps)` (the numpy
 *            rule's own float comparisons), ascending, and their range; returns how many.
 *   trace/lod.py's `_breaks` gathered every position of those blocks into temporaries (1.2M
 *   positions for 33k breaks in a 20M-event window: 40 ms); this reads them in order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The answer this many keys ahead is prefetched (from the last answers' spacing), so that
 * the memory reads of several searches overlap instead of waiting one after another. */
#define PREFETCH_KEYS 4
#define WALK_STEPS 8

/* One range's search state: every position in [lo, pos) holds a value below the current
 * key; `stride` is how far the last answer moved (where the next one will be). */
typedef struct {
    int64_t lo, hi, pos, stride, first, count;
} Range;

/* The answer for range `r`'s key `j`; updates its state. */
static inline int64_t search_next(const int64_t *values, const int64_t *keys, Range *r,
                                  int64_t j) {
    int64_t key = keys[r->first + j], pos = r->pos, stride = r->stride, hi = r->hi;
    if (j && key < keys[r->first + j - 1]) {
        pos = r->lo;
        stride = 0;
    }
    /* The answer is in (below, above]: values[below] < key (below = pos - 1 stands for
     * "nothing known"), values[above] >= key or above == hi. Start at the guess. */
    int64_t guess = pos + stride < hi ? pos + stride : hi, below, above, step = 1;
    if (guess > pos && values[guess - 1] >= key) { /* at or before guess - 1: back */
        above = guess - 1;
        below = pos - 1;
        for (;;) {
            int64_t probe = above - step;
            if (probe <= below) break;
            if (values[probe] < key) {
                below = probe;
                break;
            }
            above = probe;
            step <<= 1;
        }
    } else { /* at or after the guess: forward */
        below = guess - 1;
        above = hi;
        for (;;) {
            int64_t probe = guess + step - 1;
            if (probe >= hi) break;
            if (values[probe] >= key) {
                above = probe;
                break;
            }
            below = probe;
            step <<= 1;
        }
    }
    while (above - below > 1) {
        int64_t mid = below + (above - below) / 2;
        if (values[mid] < key) below = mid;
        else above = mid;
    }
    r->stride = above - pos;
    r->pos = above;
    if (r->stride > 0 && above + r->stride * PREFETCH_KEYS < hi)
        __builtin_prefetch(values + above + r->stride * PREFETCH_KEYS);
    return above;
}

/* The first position from `p` (below hi, or hi) whose value is at least `key`, walking: the
 * end of a zone a few ps wide is where its start is, or a step or two after it; past
 * WALK_STEPS steps (many events at one instant) a binary search. */
static inline int64_t walk_to(const int64_t *values, int64_t p, int64_t hi, int64_t key) {
    for (int steps = 0; p < hi && values[p] < key; p++) {
        if (++steps > WALK_STEPS) {
            int64_t below = p, above = hi; /* values[below] < key */
            while (above - below > 1) {
                int64_t mid = below + (above - below) / 2;
                if (values[mid] < key) below = mid;
                else above = mid;
            }
            return above;
        }
    }
    return p;
}

static int int64_length(Py_buffer *buffer, const char *name, Py_ssize_t *n) {
    if (buffer->len % 8) {
        PyErr_Format(PyExc_ValueError, "%s must be int64", name);
        return 0;
    }
    *n = buffer->len / 8;
    return 1;
}

static PyObject *first_at_least(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer values, lo, hi, offsets, keys, out, end_keys = {0}, end_out = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*|y*w*", &values, &lo, &hi, &offsets, &keys, &out,
                          &end_keys, &end_out))
        return NULL;
    PyObject *result = NULL;
    Range *ranges = NULL;
    Py_ssize_t n, k, k_hi, num_offsets, m, m_out;
    if (!int64_length(&values, "values", &n) || !int64_length(&lo, "lo", &k) ||
        !int64_length(&hi, "hi", &k_hi) || !int64_length(&offsets, "offsets", &num_offsets) ||
        !int64_length(&keys, "keys", &m) || !int64_length(&out, "out", &m_out))
        goto done;
    if (end_keys.obj && (end_keys.len != keys.len || !end_out.obj || end_out.len != keys.len)) {
        PyErr_SetString(PyExc_ValueError, "end_keys and end_out must be like keys");
        goto done;
    }
    if (k_hi != k || num_offsets != k + 1 || m_out != m) {
        PyErr_SetString(PyExc_ValueError, "lo, hi, offsets, keys and out do not fit together");
        goto done;
    }
    const int64_t *lo_at = lo.buf, *hi_at = hi.buf, *offset_at = offsets.buf;
    for (Py_ssize_t r = 0; r < k; r++) {
        if (lo_at[r] < 0 || hi_at[r] < lo_at[r] || hi_at[r] > n || offset_at[r] < 0 ||
            offset_at[r + 1] < offset_at[r] || offset_at[r + 1] > m) {
            PyErr_SetString(PyExc_ValueError, "a range or its keys lie outside the arrays");
            goto done;
        }
    }
    ranges = PyMem_RawMalloc((k ? k : 1) * sizeof(Range));
    if (!ranges) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    /* The ranges' searches take turns (key 0 of every range, then key 1, ...): searches of
     * different ranges do not wait for each other, so their memory reads overlap. */
    int64_t rounds = 0;
    for (Py_ssize_t r = 0; r < k; r++) {
        Range init = {lo_at[r], hi_at[r], lo_at[r], 0, offset_at[r],
                      offset_at[r + 1] - offset_at[r]};
        ranges[r] = init;
        if (init.count > rounds) rounds = init.count;
    }
    const int64_t *key_at = keys.buf;
    int64_t *out_at = out.buf;
    for (int64_t j = 0; j < rounds; j++) {
        for (Py_ssize_t r = 0; r < k; r++) {
            if (j < ranges[r].count) {
                int64_t at = ranges[r].first + j;
                out_at[at] = search_next(values.buf, key_at, &ranges[r], j);
                if (end_keys.obj)
                    ((int64_t *)end_out.buf)[at] = walk_to(
                        values.buf, out_at[at], ranges[r].hi, ((const int64_t *)end_keys.buf)[at]);
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(ranges);
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&hi);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&out);
    if (end_keys.obj) PyBuffer_Release(&end_keys);
    if (end_out.obj) PyBuffer_Release(&end_out);
    return result;
}

static PyObject *breaks_in_blocks(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer start, end, blocks, part, lo, hi, out, out_part;
    double pixel_ps;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*dw*w*", &start, &end, &blocks, &part, &lo, &hi,
                          &pixel_ps, &out, &out_part))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n, n_end, b, b_part, k, k_hi, m, m_part;
    if (!int64_length(&start, "start", &n) || !int64_length(&end, "end", &n_end) ||
        !int64_length(&blocks, "blocks", &b) || !int64_length(&part, "part", &b_part) ||
        !int64_length(&lo, "lo", &k) || !int64_length(&hi, "hi", &k_hi) ||
        !int64_length(&out, "out", &m) || !int64_length(&out_part, "out_part", &m_part))
        goto done;
    if (n_end != n || b_part != b || k_hi != k || m != m_part || m < 64 * b) {
        PyErr_SetString(PyExc_ValueError, "the arrays of breaks_in_blocks do not fit together");
        goto done;
    }
    const int64_t *s = start.buf, *e = end.buf, *block_at = blocks.buf, *part_at = part.buf,
                  *lo_at = lo.buf, *hi_at = hi.buf;
    for (Py_ssize_t r = 0; r < k; r++) {
        if (lo_at[r] < 0 || hi_at[r] < lo_at[r] || hi_at[r] > n) {
            PyErr_SetString(PyExc_ValueError, "a range lies outside the arrays");
            goto done;
        }
    }
    for (Py_ssize_t j = 0; j < b; j++) {
        if (part_at[j] < 0 || part_at[j] >= k || block_at[j] < 0 || block_at[j] > n / 64) {
            PyErr_SetString(PyExc_ValueError, "a block or its range lies outside the arrays");
            goto done;
        }
    }
    int64_t *out_at = out.buf, *out_part_at = out_part.buf, count = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < b; j++) {
        int64_t r = part_at[j], first = block_at[j] * 64, last = first + 64;
        if (first < lo_at[r]) first = lo_at[r];
        if (last > hi_at[r]) last = hi_at[r];
        for (int64_t p = first; p < last; p++) {
            int wide = (double)(e[p] - s[p]) >= pixel_ps;
            int gap = p > lo_at[r] && !((double)s[p] <= (double)e[p - 1] + pixel_ps);
            if (wide | gap) {
                out_at[count] = p;
                out_part_at[count] = r;
                count++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(count);
done:
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&blocks);
    PyBuffer_Release(&part);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&hi);
    PyBuffer_Release(&out);
    PyBuffer_Release(&out_part);
    return result;
}

static PyMethodDef methods[] = {
    {"first_at_least", first_at_least, METH_VARARGS,
     "first_at_least(values, lo, hi, offsets, keys, out[, end_keys, end_out]): per key, the "
     "first position of its "
     "range whose value is at least the key (see trace/_lod.c)"},
    {"breaks_in_blocks", breaks_in_blocks, METH_VARARGS,
     "breaks_in_blocks(start, end, blocks, part, lo, hi, pixel_ps, out, out_part): the "
     "positions of wide events and gaps in the given blocks (see trace/_lod.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lod", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__lod(void) { return PyModule_Create(&module); }
