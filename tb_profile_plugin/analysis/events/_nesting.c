/* Optional accelerator: the nesting depth of one track's events and their order by
 * (depth, start), in one pass with a stack (trace/depth.py keeps the numpy version, the
 * reference that the tests compare this with, and the fallback when this is not built).
 *
 * depth_order(start, end, order_out[, names, start_out, end_out, names_out, durations])
 *     -> list of event counts per depth
 *   start, end: int64[n], the events in start order (start ascending, longer first);
 *   order_out:  writable int64[n] or int32[n] (n < 2^31), filled with the positions 0..n-1
 *               ordered by (depth, position): a counting sort, stable within a depth;
 *   names (int32[n]) and the writable start_out, end_out (int64[n]), names_out (int32[n]):
 *               when given, filled with start, end and names in that order;
 *   durations:  when true, `end` holds each event's duration and its end is start +
 *               duration (a decoded line's own columns: no n-element `end` made first).
 *
 * The rule is trace/depth.py's: with doubled close times (2*end, or 2*start + 1 for a
 * zero-length event, which closes half a ps after it opens), an event's parent is the nearest
 * earlier event whose close is not before its own, so the stack keeps every open event whose
 * close is not before the next one's: depth = what is on the stack when the event arrives.
 * For properly nested events that is the number of events still open (closes before opens
 * at one instant); for events that overlap without nesting it is analysis/events/nesting.py's
 * `stack_nesting`. Times are within 2^58 ps (xspace/decode.py), so doubling cannot wrap.
 * Two passes of the stack (the first counts the events per depth, the second places each at
 * its depth's next slot), so nothing per event is kept but the output; the stack and the
 * counts take 8 bytes per level of nesting. O(n) time; the GIL is released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Doubled close time: 2 * end, or 2 * start + 1 for a zero-length event. */
static inline int64_t close_time(int64_t start, int64_t end) {
    return end == start ? 2 * start + 1 : 2 * end;
}

static inline int64_t close_of(const int64_t *s, const int64_t *e, Py_ssize_t i) {
    return close_time(s[i], e[i]);
}

/* Event i's end: e[i], or s[i] + e[i] where `e` holds durations. */
static inline int64_t end_of(const int64_t *s, const int64_t *e, Py_ssize_t i, int durations) {
    return durations ? s[i] + e[i] : e[i];
}

/* Columns copied into (depth, position) order as the events are placed (optional). */
typedef struct {
    const int32_t *names;
    int64_t *start, *end;
    int32_t *names_out;
} Columns;

/* Runs the stack over the events (`e` their ends, or with `durations` their durations); with
 * `at` NULL counts the events per depth into `count` (returns the deepest depth), else writes
 * each event's position at its depth's next slot of `out` (int64) or `out32` (int32), and
 * with `columns` its start, end and name there too: the reads go in order and the writes
 * into one stream per depth, which is cheaper than gathering each column by the order. */
static Py_ssize_t run_stack(const int64_t *s, const int64_t *e, int durations, Py_ssize_t n,
                            int64_t *stack, int64_t *count, int64_t *at, int64_t *out,
                            int32_t *out32, const Columns *columns) {
    Py_ssize_t top = 0, deepest = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t end = end_of(s, e, i, durations);
        int64_t close = close_time(s[i], end);
        while (top && stack[top - 1] < close) top--;
        if (at) {
            int64_t slot = at[top]++;
            if (out32)
                out32[slot] = (int32_t)i;
            else
                out[slot] = i;
            if (columns) {
                columns->start[slot] = s[i];
                columns->end[slot] = end;
                columns->names_out[slot] = columns->names[i];
            }
        } else {
            count[top]++;
            if (top > deepest) deepest = top;
        }
        stack[top++] = close;
    }
    return deepest;
}

static int int64_buffers(Py_buffer *start, Py_buffer *end, Py_ssize_t *n) {
    *n = start->len / 8;
    if (start->len % 8 || end->len != start->len) {
        PyErr_SetString(PyExc_ValueError, "start and end must be int64[n]");
        return 0;
    }
    return 1;
}

static PyObject *depth_order(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer start, end, order;
    Py_buffer names = {0}, start_out = {0}, end_out = {0}, names_out = {0};
    int durations = 0;
    if (!PyArg_ParseTuple(args, "y*y*w*|y*w*w*w*p", &start, &end, &order, &names, &start_out,
                          &end_out, &names_out, &durations))
        return NULL;
    PyObject *result = NULL;
    int64_t *stack = NULL, *count = NULL;
    Columns columns, *with_columns = NULL;
    Py_ssize_t n;
    if (!int64_buffers(&start, &end, &n)) goto done;
    if (order.len != start.len && (order.len != 4 * n || n > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "order must be int64[n] or int32[n] (n < 2^31)");
        goto done;
    }
    if (names.buf || start_out.buf || end_out.buf || names_out.buf) {
        if (names.len != 4 * n || names_out.len != 4 * n || start_out.len != start.len
                || end_out.len != start.len) {
            PyErr_SetString(PyExc_ValueError, "names, names_out must be int32[n], "
                            "start_out, end_out int64[n]");
            goto done;
        }
        columns.names = (const int32_t *)names.buf;
        columns.start = (int64_t *)start_out.buf;
        columns.end = (int64_t *)end_out.buf;
        columns.names_out = (int32_t *)names_out.buf;
        with_columns = &columns;
    }
    const int64_t *s = (const int64_t *)start.buf, *e = (const int64_t *)end.buf;
    /* Both are touched only as deep as the nesting goes (pages never written cost nothing). */
    stack = (int64_t *)malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    count = (int64_t *)calloc((size_t)n + 1, sizeof(int64_t));
    if (!stack || !count) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t deepest;
    Py_BEGIN_ALLOW_THREADS
    deepest = run_stack(s, e, durations, n, stack, count, NULL, NULL, NULL, NULL);
    Py_END_ALLOW_THREADS
    Py_ssize_t levels = n ? deepest + 1 : 0;
    result = PyList_New(levels);
    if (!result) goto done;
    int64_t first = 0;
    for (Py_ssize_t d = 0; d < levels; d++) {
        PyObject *value = PyLong_FromLongLong(count[d]);
        if (!value) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, d, value);
        int64_t here = count[d];
        count[d] = first;  /* from here on: the next slot of depth d */
        first += here;
    }
    Py_BEGIN_ALLOW_THREADS
    run_stack(s, e, durations, n, stack, NULL, count, (int64_t *)order.buf,
              order.len == start.len ? NULL : (int32_t *)order.buf, with_columns);
    Py_END_ALLOW_THREADS
done:
    free(stack);
    free(count);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&order);
    if (names.obj) PyBuffer_Release(&names);
    if (start_out.obj) PyBuffer_Release(&start_out);
    if (end_out.obj) PyBuffer_Release(&end_out);
    if (names_out.obj) PyBuffer_Release(&names_out);
    return result;
}

/* in_start_order(start, end) -> whether the events are ordered by (start ascending, end
 * descending), as `analysis/nesting.start_order` wants them: one pass, no temporaries. */
static PyObject *in_start_order(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer start, end;
    if (!PyArg_ParseTuple(args, "y*y*", &start, &end)) return NULL;
    Py_ssize_t n;
    PyObject *result = NULL;
    if (int64_buffers(&start, &end, &n)) {
        const int64_t *s = (const int64_t *)start.buf, *e = (const int64_t *)end.buf;
        int ordered = 1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 1; i < n; i++) {
            if (s[i] < s[i - 1] || (s[i] == s[i - 1] && e[i] > e[i - 1])) {
                ordered = 0;
                break;
            }
        }
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong(ordered);
    }
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    return result;
}

/* depth_parent(start, end, depth_out, parent_out[, offset]): the depth (int32[n]) and parent
 * (int32[n] or int64[n]: offset + a position in the input, -1 at top level) of events in start order (start
 * ascending, longer first), by the same stack as depth_order: an event's parent is the event on top of the stack
 * when it arrives (analysis/events/nesting.py's rule, numpy there). O(n), the GIL released; the stack
 * holds positions, 8 bytes per level of nesting touched. */
static PyObject *depth_parent(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer start, end, depth, parent;
    long long offset = 0;
    if (!PyArg_ParseTuple(args, "y*y*w*w*|L", &start, &end, &depth, &parent, &offset))
        return NULL;
    PyObject *result = NULL;
    int64_t *stack = NULL;
    Py_ssize_t n;
    if (!int64_buffers(&start, &end, &n)) goto done;
    if (depth.len != 4 * n || (parent.len != 8 * n && parent.len != 4 * n)) {
        PyErr_SetString(PyExc_ValueError,
                        "depth_out must be int32[n], parent_out int32[n] or int64[n]");
        goto done;
    }
    if (parent.len == 4 * n && n && offset > (long long)INT32_MAX - n) {  /* no overflow */
        PyErr_SetString(PyExc_ValueError, "int32 parents cannot hold these positions");
        goto done;
    }
    stack = (int64_t *)malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!stack) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const int64_t *s = (const int64_t *)start.buf, *e = (const int64_t *)end.buf;
        int32_t *d = (int32_t *)depth.buf;
        int64_t *p64 = parent.len == 8 * n ? (int64_t *)parent.buf : NULL;
        int32_t *p32 = (int32_t *)parent.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t top = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t close = close_of(s, e, i);
            while (top && close_of(s, e, stack[top - 1]) < close) top--;
            d[i] = (int32_t)top;
            int64_t up = top ? stack[top - 1] + offset : -1;
            if (p64)
                p64[i] = up;
            else
                p32[i] = (int32_t)up;
            stack[top++] = i;
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(stack);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&depth);
    PyBuffer_Release(&parent);
    return result;
}

/* The climb shared by `under` and `lower_to_ancestors`: every event is settled after its
 * parent (by `parent`, int32[n] or int64[n] as `wide` says, -1 at a root), each chain climbed once, up to the first event
 * already settled, and settled on the way down by `settle(ctx, event, its parent)`: O(n)
 * whatever the depth. `state` (n bytes, zeroed) and `stack` (n positions) are scratch.
 * Returns 0, or -1 for a parent out of range or a cycle. Runs without the GIL. */
typedef void (*settle_fn)(void *ctx, int64_t event, int64_t up);

static inline int64_t parent_at(const void *p, int wide, int64_t j) {
    return wide ? ((const int64_t *)p)[j] : (int64_t)((const int32_t *)p)[j];
}

static int climb_all(const void *p, int wide, Py_ssize_t n, uint8_t *state, int64_t *stack,
                     settle_fn settle, void *ctx) {
    enum { NOT_YET = 0, CLIMBING = 1, SETTLED = 2 };
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t top = 0;
        int64_t j = i;
        while (state[j] == NOT_YET) {
            int64_t up = parent_at(p, wide, j);
            if (up < 0) {
                state[j] = SETTLED;  /* a root: nothing above it */
                break;
            }
            if (up >= n) return -1;
            state[j] = CLIMBING;
            stack[top++] = j;
            j = up;
        }
        if (state[j] == CLIMBING) return -1;  /* came back to its own chain: a cycle */
        while (top) {
            int64_t k = stack[--top];
            settle(ctx, k, parent_at(p, wide, k));
            state[k] = SETTLED;
        }
    }
    return 0;
}

/* Runs `climb_all` over parent (n entries of `width` bytes, 4 or 8) with fresh scratch, the
 * GIL released; NULL with the error set when it fails. */
static PyObject *climb_checked(const Py_buffer *parent, Py_ssize_t width, settle_fn settle,
                               void *ctx) {
    Py_ssize_t n = parent->len / width;
    int64_t *stack = (int64_t *)malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    uint8_t *state = (uint8_t *)calloc((size_t)(n ? n : 1), 1);
    PyObject *result = NULL;
    if (!stack || !state) {
        PyErr_NoMemory();
    } else {
        int failed;
        Py_BEGIN_ALLOW_THREADS
        failed = climb_all(parent->buf, width == 8, n, state, stack, settle, ctx);
        Py_END_ALLOW_THREADS
        if (failed)
            PyErr_SetString(PyExc_ValueError, "parent holds an index out of range or a cycle");
        else
            result = Py_None;
    }
    free(stack);
    free(state);
    return result;  /* borrowed None on success: callers build their own answer */
}

typedef struct {
    const uint8_t *mask;
    uint8_t *out;
} UnderContext;

static void settle_under(void *ctx, int64_t k, int64_t up) {
    UnderContext *c = (UnderContext *)ctx;
    c->out[k] = (uint8_t)((c->mask[up] != 0) | c->out[up]);
}

/* under(mask, parent, out): per event, whether some strict ancestor by `parent` (int32[n] or
 * int64[n], -1 at a root) is marked in `mask` (bool/uint8[n]); written into `out` (uint8[n]): each event's
 * answer is its parent's answer or its parent's mark (analysis/events/nesting.py's `under` does it
 * level by level in numpy). A parent out of range or a cycle is a ValueError, never a crash
 * or a hang. */
static PyObject *under(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer mask, parent, out;
    if (!PyArg_ParseTuple(args, "y*y*w*", &mask, &parent, &out)) return NULL;
    PyObject *result = NULL;
    if ((parent.len != 8 * mask.len && parent.len != 4 * mask.len) || out.len != mask.len) {
        PyErr_SetString(PyExc_ValueError,
                        "mask and out must be uint8[n], parent int32[n] or int64[n]");
    } else {
        UnderContext ctx = {(const uint8_t *)mask.buf, (uint8_t *)out.buf};
        memset(out.buf, 0, (size_t)out.len);
        result = climb_checked(&parent, mask.len ? parent.len / mask.len : 8, settle_under,
                               &ctx);
        Py_XINCREF(result);
    }
    PyBuffer_Release(&mask);
    PyBuffer_Release(&parent);
    PyBuffer_Release(&out);
    return result;
}

typedef struct {
    int64_t *group;
    int changed;
} LowerContext;

static void settle_lower(void *ctx, int64_t k, int64_t up) {
    LowerContext *c = (LowerContext *)ctx;
    if (c->group[up] < c->group[k]) {
        c->group[k] = c->group[up];
        c->changed = 1;
    }
}

/* lower_to_ancestors(group, parent) -> bool: lowers every event's group (int64[n], in place)
 * to the smallest among its own and its ancestors' by `parent` (int32[n] or int64[n], -1 at a
 * root), and
 * says whether any changed (analysis/events/forest.py does it level by level in numpy). A parent out
 * of range or a cycle is a ValueError. */
static PyObject *lower_to_ancestors(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer group, parent;
    if (!PyArg_ParseTuple(args, "w*y*", &group, &parent)) return NULL;
    PyObject *result = NULL;
    if (group.len % 8 || (parent.len != group.len && 2 * parent.len != group.len)) {
        PyErr_SetString(PyExc_ValueError, "group must be int64[n], parent int32[n] or int64[n]");
    } else {
        LowerContext ctx = {(int64_t *)group.buf, 0};
        Py_ssize_t width = parent.len == group.len ? 8 : 4;
        if (climb_checked(&parent, width, settle_lower, &ctx))
            result = PyBool_FromLong(ctx.changed);
    }
    PyBuffer_Release(&group);
    PyBuffer_Release(&parent);
    return result;
}

static PyMethodDef methods[] = {
    {"depth_order", depth_order, METH_VARARGS,
     "depth_order(start, end, order_out[, names, start_out, end_out, names_out, durations]) "
     "-> counts per depth (see analysis/events/_nesting.c)"},
    {"depth_parent", depth_parent, METH_VARARGS,
     "depth_parent(start, end, depth_out, parent_out): depth and parent of events in start "
     "order (see analysis/events/_nesting.c)"},
    {"under", under, METH_VARARGS,
     "under(mask, parent, out): whether some strict ancestor is marked (see analysis/events/_nesting.c)"},
    {"lower_to_ancestors", lower_to_ancestors, METH_VARARGS,
     "lower_to_ancestors(group, parent) -> changed: each group lowered to its ancestors' "
     "smallest (see analysis/events/_nesting.c)"},
    {"in_start_order", in_start_order, METH_VARARGS,
     "in_start_order(start, end) -> whether ordered by (start, end descending)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_nesting", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__nesting(void) { return PyModule_Create(&module); }
