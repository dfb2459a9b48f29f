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
 *
 * scan_ranges(start, end, lo, hi, a_ps, pixel_ps, kept, block_first, block_count, block_end,
 *             block_max, threshold_ps) -> (overlapping, num_kept, num_blocks)
 *   start, end: int64[n], the index's event columns;
 *   lo, hi:  int64[k], ascending non-empty ranges of whole (track, depth) segments' window
 *            candidates (one range per segment);
 *   a_ps, pixel_ps: the window's start (int64) and pixel (a float);
 *   kept:    writable int64[>= sum of the ranges' sizes]: the ids the scan of
 *            trace/window.py (`_overlapping`, then `_scan`) keeps, ascending;
 *   block_first, block_count, block_end: writable int64[>= half that sum]: its density
 *            blocks, the first id, the count of events and the latest end of each.
 *   Of each range only the events ending at or after a_ps are read (`_overlapping`); of
 *   those, an event is kept when it is at least a pixel wide, `(double)(end - start) >=
 *   pixel_ps`, the first of its range, or the first of its pixel column, `floor((double)
 *   (max(start, a) - a) / pixel_ps)` (the float arithmetic of numpy's version); a narrow
 *   event joins the narrow one before it when `(double)start <= (double)prev_end +
 *   pixel_ps`, and a run of two or more joined events is a block. `block_max`: the index's
 *   level-of-detail maxima (trace/lod.py `summarise`: per 64 events, the largest duration
 *   or gap before an event); a block of them below `threshold_ps` (a pixel less
 *   lod.margin_ps) that lies in one pixel column holds no kept event and no break, and only
 *   its ends are read (its starts and branches are what cost: ~4 ns per event otherwise).
 *   Returns the number of
 *   events that overlap the window, of the kept and of the blocks. One pass, no temporaries:
 *   numpy's version gathered starts, ends, columns and flags of every candidate (a window
 *   over a 10M-event capture's 23M overlapping-kernel rows took 0.4-0.9 s there).
 *
 * summarise(start, end, bounds, block_max, disjoint)
 *   start, end: int64[n], the index's event columns; bounds: int64[k + 1], ascending from 0
 *            to n, the (track, depth) segments;
 *   block_max: writable int64[ceil(n / 64)]: per block of 64 events (by position), the
 *            largest of each event's `end - start` and its gap after the previous event of
 *            its segment (`start - previous end`; 0 for a segment's first event), a last
 *            partial block counting 0 for its missing events (numpy's zero padding);
 *   disjoint: writable bool[k]: per segment, no gap below 0.
 *   trace/lod.py `summarise` (the reference) made six full-size passes and temporaries of
 *   the columns (0.1 s of a 10M-event index of the lines' 0.25 s); this reads them once.
 *   Differences wrap around as numpy's int64 arithmetic does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
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

static PyObject *scan_ranges(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer start, end, lo, hi, kept, block_first, block_count, block_end, block_max;
    long long a_ps;
    double pixel_ps, threshold_ps;
    if (!PyArg_ParseTuple(args, "y*y*y*y*Ldw*w*w*w*y*d", &start, &end, &lo, &hi, &a_ps,
                          &pixel_ps, &kept, &block_first, &block_count, &block_end,
                          &block_max, &threshold_ps))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n, n_end, k, k_hi, m, b, b_count, b_end, num_maxima;
    if (!int64_length(&block_max, "block_max", &num_maxima)) goto done;
    const int64_t *maxima = block_max.buf;
    if (!int64_length(&start, "start", &n) || !int64_length(&end, "end", &n_end) ||
        !int64_length(&lo, "lo", &k) || !int64_length(&hi, "hi", &k_hi) ||
        !int64_length(&kept, "kept", &m) || !int64_length(&block_first, "block_first", &b) ||
        !int64_length(&block_count, "block_count", &b_count) ||
        !int64_length(&block_end, "block_end", &b_end))
        goto done;
    const int64_t *s = start.buf, *e = end.buf, *lo_at = lo.buf, *hi_at = hi.buf;
    int64_t total = 0;
    for (Py_ssize_t r = 0; r < k; r++) {
        if (lo_at[r] < 0 || hi_at[r] <= lo_at[r] || hi_at[r] > n ||
            (r && lo_at[r] < hi_at[r - 1])) {
            PyErr_SetString(PyExc_ValueError, "a range is empty, unordered or outside");
            goto done;
        }
        total += hi_at[r] - lo_at[r];
    }
    if (n_end != n || k_hi != k || m < total || b_count != b || b_end != b || b < total / 2) {
        PyErr_SetString(PyExc_ValueError, "the arrays of scan_ranges do not fit together");
        goto done;
    }
    int64_t *kept_at = kept.buf, *first_at = block_first.buf, *count_at = block_count.buf,
            *end_at = block_end.buf;
    int64_t overlapping = 0, num_kept = 0, num_blocks = 0;
    const int64_t a = a_ps;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < k; r++) {
        int have_prev = 0, prev_narrow = 0;
        int64_t prev_end = 0, run_first = 0, run_count = 0, run_end = 0;
        double prev_column = 0.0;
        for (int64_t p = lo_at[r]; p < hi_at[r]; p++) {
            int64_t ep = e[p], sp = s[p];
            if (ep < a) continue;
            overlapping++;
            int narrow = (double)(ep - sp) < pixel_ps;
            double column = floor((double)((sp > a ? sp : a) - a) / pixel_ps);
            if (!narrow || !have_prev || column != prev_column) kept_at[num_kept++] = p;
            int joins = narrow && have_prev && prev_narrow &&
                        (double)sp <= (double)prev_end + pixel_ps;
            if (joins) {
                run_count++;
                if (ep > run_end) run_end = ep;
            } else {
                if (run_count >= 2) {
                    first_at[num_blocks] = run_first;
                    count_at[num_blocks] = run_count;
                    end_at[num_blocks++] = run_end;
                }
                run_count = narrow ? 1 : 0;
                run_first = p;
                run_end = ep;
            }
            have_prev = 1;
            prev_narrow = narrow;
            prev_end = ep;
            prev_column = column;
            /* A block of 64 from here whose durations and gaps are all below the threshold
             * (a pixel less the rounding margin) and whose last event is in this one's
             * column: the next 63 events overlap the window (their starts are at least
             * this one's, >= a, and so are their ends), are narrow, join the one before and start no column, so
             * only their latest end is read. */
            if ((p & 63) == 0 && p + 64 <= hi_at[r] && sp >= a && (p >> 6) < num_maxima &&
                (double)maxima[p >> 6] < threshold_ps &&
                floor((double)(s[p + 63] - a) / pixel_ps) == column) {
                int64_t latest = run_end, lowest = a;
                for (int64_t q = p + 1; q < p + 64; q++) {
                    latest = e[q] > latest ? e[q] : latest;
                    lowest = e[q] < lowest ? e[q] : lowest;
                }
                if (lowest >= a) { /* (no end before its start took one out of the window) */
                    overlapping += 63;
                    run_count += 63;
                    run_end = latest;
                    prev_end = e[p + 63];
                    p += 63;
                }
            }
        }
        if (run_count >= 2) {
            first_at[num_blocks] = run_first;
            count_at[num_blocks] = run_count;
            end_at[num_blocks++] = run_end;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("LLL", (long long)overlapping, (long long)num_kept,
                           (long long)num_blocks);
done:
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&hi);
    PyBuffer_Release(&kept);
    PyBuffer_Release(&block_first);
    PyBuffer_Release(&block_count);
    PyBuffer_Release(&block_end);
    PyBuffer_Release(&block_max);
    return result;
}

static inline int64_t wrapping_sub(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

static PyObject *summarise(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer start, end, bounds, block_max, disjoint;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*", &start, &end, &bounds, &block_max, &disjoint))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n, n_end, k1, b;
    if (!int64_length(&start, "start", &n) || !int64_length(&end, "end", &n_end) ||
        !int64_length(&bounds, "bounds", &k1) || !int64_length(&block_max, "block_max", &b))
        goto done;
    if (n_end != n || k1 < 1 || b != (n + 63) / 64 || disjoint.len != k1 - 1 ||
        disjoint.itemsize != 1) {
        PyErr_SetString(PyExc_ValueError, "the arrays of summarise do not fit together");
        goto done;
    }
    const int64_t *s = start.buf, *e = end.buf, *at = bounds.buf;
    if (at[0] != 0 || at[k1 - 1] != n) {
        PyErr_SetString(PyExc_ValueError, "the segments do not cover the events");
        goto done;
    }
    for (Py_ssize_t j = 1; j < k1; j++) {
        if (at[j] < at[j - 1]) {
            PyErr_SetString(PyExc_ValueError, "the segments' bounds are not ascending");
            goto done;
        }
    }
    int64_t *bm = block_max.buf;
    uint8_t *dis = disjoint.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < b; j++) bm[j] = INT64_MIN;
    if (n % 64) bm[b - 1] = 0;  /* the padding's zeros */
    for (Py_ssize_t g = 0; g + 1 < k1; g++) {
        int ok = 1;
        for (int64_t p = at[g]; p < at[g + 1]; p++) {
            int64_t key = wrapping_sub(e[p], s[p]);
            if (p > at[g]) {
                int64_t gap = wrapping_sub(s[p], e[p - 1]);
                if (gap < 0) ok = 0;
                if (gap > key) key = gap;
            } else if (key < 0) {
                key = 0;  /* a segment's first event: its gap counts 0 */
            }
            if (key > bm[p >> 6]) bm[p >> 6] = key;
        }
        dis[g] = (uint8_t)ok;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&bounds);
    PyBuffer_Release(&block_max);
    PyBuffer_Release(&disjoint);
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
    {"scan_ranges", scan_ranges, METH_VARARGS,
     "scan_ranges(start, end, lo, hi, a_ps, pixel_ps, kept, block_first, block_count, "
     "block_end, block_max, threshold_ps): a window's kept events and density blocks of whole segments, read once "
     "(see trace/_lod.c)"},
    {"summarise", summarise, METH_VARARGS,
     "summarise(start, end, bounds, block_max, disjoint): the level of detail's block maxima "
     "and the segments that are disjoint, in one pass (see trace/_lod.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lod", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__lod(void) { return PyModule_Create(&module); }
