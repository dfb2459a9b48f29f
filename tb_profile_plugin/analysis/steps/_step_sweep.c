/* Optional accelerator: the step database's per-type unions in one pass over the events
 * (analysis/steps/step_db.py keeps the numpy version, the reference that the tests compare
 * this with, and the fallback when this is not built).
 *
 * type_unions(types, groups, start, end, rows, begin, finish, valid, out)
 *   types:  int8[n], each event's EventType (the counted ones are 0..NUM_TYPES-1);
 *   groups: int8/16/32/64[n], each event's group (0..G-1 for the counted ones);
 *   start, end: int64[n], ps;
 *   rows:   int64[m], the counted events (positions into the columns above), any order;
 *   begin, finish: int64[G], each group's step span; valid: bool[G], whether it is a step;
 *   out:    writable int64[(NUM_TYPES + 1) * G], zeroed: row t (t * G + g) receives the
 *           length of the union of group g's events of type >= t, clipped to its span.
 *
 * The rows are counted into their groups (a stable counting sort); per group, its events are
 * gathered into a local array (the only random reads) and sorted by start (a natural merge
 * sort: a few lines' runs), then:
 * 1. zero-length events get the span the reference's sweep gives them (analysis/steps/
 *    instant_spans.py): an instant x of type t that no longer-than-0 event of type >= t
 *    covers (start <= x < end) ends at the earliest of the first end after x of a longer
 *    event of type t, the first start at or after x of an event of a higher type, and the
 *    group's last end; a forward pass over the blocks of equal starts finds the covered ones,
 *    a backward pass the ends (running minima per type). The span starts at the instant, so
 *    the instant's own event takes its end: no events are added and the order stays.
 * 2. each event is clipped to the step, and one sweep keeps, per threshold t, the running
 *    maximum end of the events of type >= t: what an event adds beyond it is new union.
 * That is step_db.py's sort, selection and union per threshold, with no sort of all the
 * events and no per-threshold copies. O(m * (NUM_TYPES + log of the runs per group)) time.
 *
 * group_unions(groups, start, end, order, out): step_db.py's `union_per_group` /
 *   `union_sorted` (rows through `order`, or as they are with None), one running maximum.
 * counted_events(types, groups, parent, out) -> count: the events the database counts
 *   (`_counted_events`), positions into `out` unless it is None (called once to size it).
 * core_spans(types, groups, plane, on_device, start, end, num_planes, first, last): per
 *   (group, device plane) cell the first start and last end (`_longest_core_spans`).
 * All release the GIL; bad input (a type, group, parent, plane or row out of range) raises
 * ValueError, never a wrong figure.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NUM_TYPES 14

/* What a run can fail on, reported once the GIL is back. */
enum { SWEEP_OK = 0, SWEEP_BAD_TYPE, SWEEP_BAD_GROUP, SWEEP_BAD_ROW, SWEEP_NO_MEMORY };

/* One event of a group: its span and type. */
typedef struct {
    int64_t start, end;
    int64_t type;
} Event;

/* One group's events, sorted by start (ends are updated in place), with room to sort. */
typedef struct {
    Event *ev, *spare;
    Py_ssize_t *runs;
    Py_ssize_t capacity;
} Local;

static int grow(Local *local, Py_ssize_t size) {
    if (size <= local->capacity) return 1;
    Py_ssize_t capacity = size > 2 * local->capacity ? size : 2 * local->capacity;
    Event *ev = realloc(local->ev, (size_t)capacity * sizeof(Event));
    if (!ev) return 0;
    local->ev = ev;
    Event *spare = realloc(local->spare, (size_t)capacity * sizeof(Event));
    if (!spare) return 0;
    local->spare = spare;
    Py_ssize_t *runs = realloc(local->runs, (size_t)(capacity + 1) * sizeof(Py_ssize_t));
    if (!runs) return 0;
    local->runs = runs;
    local->capacity = capacity;
    return 1;
}

/* Sorts the group's n events by start: a natural merge sort (a group's events come from a
 * few lines, each already in start order, so a few runs merged pairwise). The order of equal
 * starts is free: every pass below takes the events of one start as a block. */
static void sort_by_start(Local *l, Py_ssize_t n) {
    Py_ssize_t num_runs = 0;
    l->runs[num_runs++] = 0;
    for (Py_ssize_t k = 1; k < n; k++)
        if (l->ev[k].start < l->ev[k - 1].start) l->runs[num_runs++] = k;
    l->runs[num_runs] = n;
    Event *from = l->ev, *to = l->spare;
    while (num_runs > 1) {
        Py_ssize_t merged = 0;
        for (Py_ssize_t r = 0; r < num_runs; r += 2) {
            Py_ssize_t lo = l->runs[r], mid = l->runs[r + 1];
            Py_ssize_t hi = r + 2 <= num_runs ? l->runs[r + 2] : mid;  /* (a last run alone) */
            Py_ssize_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                to[k++] = from[j].start < from[i].start ? from[j++] : from[i++];
            while (i < mid) to[k++] = from[i++];
            while (j < hi) to[k++] = from[j++];
            l->runs[merged++] = lo;
        }
        l->runs[merged] = n;
        num_runs = merged;
        Event *swap = from;
        from = to;
        to = swap;
    }
    if (from != l->ev) memcpy(l->ev, from, (size_t)n * sizeof(Event));
}

/* Marks covered instants: their end becomes INT64_MIN (they take no span). Forward over the
 * blocks of equal starts: the running maximum end of the longer events of type >= t, with
 * the block's own longer events in, is beyond x exactly where one covers it. */
static void mark_covered(Local *l, Py_ssize_t n) {
    int64_t reach[NUM_TYPES];
    for (int t = 0; t < NUM_TYPES; t++) reach[t] = INT64_MIN;
    for (Py_ssize_t i = 0; i < n;) {
        int64_t x = l->ev[i].start;
        Py_ssize_t j = i;
        for (; j < n && l->ev[j].start == x; j++) {
            if (l->ev[j].end == x) continue;
            for (int t = 0; t <= l->ev[j].type; t++)
                if (l->ev[j].end > reach[t]) reach[t] = l->ev[j].end;
        }
        for (Py_ssize_t k = i; k < j; k++)
            if (l->ev[k].end == x && reach[l->ev[k].type] > x) l->ev[k].end = INT64_MIN;
        i = j;
    }
}

/* Gives each uncovered instant its span's end (itself, an empty span, where there is none)
 * and covered ones their own start back. Backward over the blocks of equal starts, keeping
 * per type the least end of its longer events and the least start of its events, at or
 * after the block. The block's own longer events may count among the ends: one of type t
 * starting at x covers an instant of type t at x, which asks for no end. */
static void instant_ends(Local *l, Py_ssize_t n, int64_t last_end) {
    int64_t later_end[NUM_TYPES], first_start[NUM_TYPES];
    for (int t = 0; t < NUM_TYPES; t++) later_end[t] = first_start[t] = INT64_MAX;
    for (Py_ssize_t j = n; j > 0;) {
        int64_t x = l->ev[j - 1].start;
        Py_ssize_t i = j - 1;
        while (i > 0 && l->ev[i - 1].start == x) i--;
        for (Py_ssize_t k = i; k < j; k++) {
            int t = l->ev[k].type;
            first_start[t] = x;
            if (l->ev[k].end > x && l->ev[k].end < later_end[t]) later_end[t] = l->ev[k].end;
        }
        for (Py_ssize_t k = i; k < j; k++) {
            if (l->ev[k].end == INT64_MIN) {
                l->ev[k].end = x;  /* covered */
            } else if (l->ev[k].end == x) {
                int t = l->ev[k].type;
                int64_t stop = last_end < later_end[t] ? last_end : later_end[t];
                for (int u = t + 1; u < NUM_TYPES; u++)
                    if (first_start[u] < stop) stop = first_start[u];
                l->ev[k].end = stop > x ? stop : x;
            }
        }
        j = i;
    }
}

/* Adds group g's union per threshold to out[t * G + g]: events clipped to [b, f), empty
 * ones skipped, a running maximum end per threshold. */
static void add_unions(const Local *l, Py_ssize_t n, int64_t b, int64_t f, int64_t *out,
                       Py_ssize_t g, Py_ssize_t num_groups) {
    int64_t reach[NUM_TYPES], sum[NUM_TYPES];
    for (int t = 0; t < NUM_TYPES; t++) {
        reach[t] = INT64_MIN;
        sum[t] = 0;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t s = l->ev[k].start > b ? l->ev[k].start : b;
        int64_t e = l->ev[k].end < f ? l->ev[k].end : f;
        if (e <= s) continue;
        for (int t = 0; t <= l->ev[k].type; t++) {
            int64_t from = s > reach[t] ? s : reach[t];
            if (e > from) {
                sum[t] += e - from;
                reach[t] = e;
            }
        }
    }
    for (int t = 0; t < NUM_TYPES; t++) out[(Py_ssize_t)t * num_groups + g] += sum[t];
}

/* Group of event i from a column of signed integers of `width` bytes (1, 2, 4 or 8). */
static inline int64_t group_of(const void *groups, int width, int64_t i) {
    switch (width) {
        case 1: return ((const int8_t *)groups)[i];
        case 2: return ((const int16_t *)groups)[i];
        case 4: return ((const int32_t *)groups)[i];
        default: return ((const int64_t *)groups)[i];
    }
}

/* The whole run over the counted events `rows` (m positions, any order), without the GIL:
 * a counting sort of the rows by group (stable), then per group: gather, sort by start,
 * instants, unions. Returns SWEEP_OK or what went wrong. */
static int sweep(const int8_t *types, const void *groups, int width, const int64_t *start,
                 const int64_t *end, Py_ssize_t n, const int64_t *rows, Py_ssize_t m,
                 const int64_t *begin, const int64_t *finish, const uint8_t *valid,
                 Py_ssize_t num_groups, int64_t *out) {
    Py_ssize_t *first = calloc((size_t)num_groups + 1, sizeof(Py_ssize_t));
    int64_t *by_group = malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    Local local = {0};
    int status = first && by_group ? SWEEP_OK : SWEEP_NO_MEMORY;
    for (Py_ssize_t k = 0; k < m && status == SWEEP_OK; k++) {
        int64_t i = rows[k];
        if (i < 0 || i >= n) { status = SWEEP_BAD_ROW; break; }
        int64_t g = group_of(groups, width, i);
        if (g < 0 || g >= num_groups) { status = SWEEP_BAD_GROUP; break; }
        if (types[i] < 0 || types[i] >= NUM_TYPES) { status = SWEEP_BAD_TYPE; break; }
        first[g + 1]++;
    }
    if (status == SWEEP_OK) {
        for (Py_ssize_t g = 0; g < num_groups; g++) first[g + 1] += first[g];
        for (Py_ssize_t k = 0; k < m; k++) {  /* (first[g] ends as group g + 1's start) */
            int64_t i = rows[k];
            by_group[first[group_of(groups, width, i)]++] = i;
        }
    }
    for (Py_ssize_t g = 0, lo = 0; g < num_groups && status == SWEEP_OK; g++) {
        Py_ssize_t hi = first[g], count = hi - lo;
        if (!count || !valid[g]) { lo = hi; continue; }  /* not a step: none of its time counts */
        if (!grow(&local, count)) { status = SWEEP_NO_MEMORY; break; }
        int has_instant = 0;
        int64_t last_end = INT64_MIN;
        for (Py_ssize_t k = 0; k < count; k++) {
            int64_t i = by_group[lo + k];
            local.ev[k].type = types[i];
            local.ev[k].start = start[i];
            local.ev[k].end = end[i];
            has_instant |= end[i] == start[i];
            if (end[i] > last_end) last_end = end[i];
        }
        sort_by_start(&local, count);
        if (has_instant) {
            mark_covered(&local, count);
            instant_ends(&local, count, last_end);
        }
        add_unions(&local, count, begin[g], finish[g], out, g, num_groups);
        lo = hi;
    }
    free(first);
    free(by_group);
    free(local.ev);
    free(local.spare);
    free(local.runs);
    return status;
}

static int check_size(const Py_buffer *buffer, Py_ssize_t itemsize, Py_ssize_t count,
                      const char *name) {
    if (buffer->len != itemsize * count) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes", name, count,
                     itemsize);
        return 0;
    }
    return 1;
}

/* The width of a column of n signed integers (1, 2, 4 or 8 bytes), or 0 with the error set. */
static int group_width(const Py_buffer *groups, Py_ssize_t n) {
    for (int width = 1; width <= 8; width *= 2)
        if (groups->len == width * n && (n || width == 8)) return width;
    PyErr_SetString(PyExc_ValueError, "groups: expected one signed integer of 1, 2, 4 or 8 "
                    "bytes per event");
    return 0;
}

static PyObject *report(int status, Py_ssize_t num_groups);

static PyObject *type_unions(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer types, groups, start, end, rows, begin, finish, valid, out;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*w*", &types, &groups, &start, &end, &rows,
                          &begin, &finish, &valid, &out))
        return NULL;
    Py_ssize_t n = types.len, m = rows.len / 8, num_groups = begin.len / 8;
    int width = group_width(&groups, n);
    int ok = width && check_size(&start, 8, n, "start")
             && check_size(&end, 8, n, "end") && check_size(&rows, 8, m, "rows")
             && check_size(&finish, 8, num_groups, "finish")
             && check_size(&valid, 1, num_groups, "valid")
             && check_size(&out, 8, (NUM_TYPES + 1) * num_groups, "out");
    int status = SWEEP_OK;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        status = sweep(types.buf, groups.buf, width, start.buf, end.buf, n, rows.buf, m,
                       begin.buf, finish.buf, valid.buf, num_groups, out.buf);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&types);
    PyBuffer_Release(&groups);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&begin);
    PyBuffer_Release(&finish);
    PyBuffer_Release(&valid);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    return report(status, num_groups);
}

/* None, or the error a run ended on. */
static PyObject *report(int status, Py_ssize_t num_groups) {
    switch (status) {
        case SWEEP_BAD_TYPE: return PyErr_Format(PyExc_ValueError, "type outside 0..%d",
                                                 NUM_TYPES - 1);
        case SWEEP_BAD_GROUP: return PyErr_Format(PyExc_ValueError, "group outside 0..%zd",
                                                  num_groups - 1);
        case SWEEP_BAD_ROW: return PyErr_Format(PyExc_ValueError,
                                                  "a row outside the events");
        case SWEEP_NO_MEMORY: return PyErr_NoMemory();
        default: Py_RETURN_NONE;
    }
}

/* Adds into out[g] the length of the union of each group's intervals, the rows taken in
 * `order` (or as they are, with `order` NULL), sorted by (group, start). Each row adds what
 * it reaches beyond the running maximum end of the earlier rows of its run of one group:
 * step_db.py's `_add_unions` row for row (the same sums even for rows out of order). */
static int unions(const void *groups, int width, const int64_t *start, const int64_t *end,
                  Py_ssize_t n, const int64_t *order, Py_ssize_t m, Py_ssize_t num_groups,
                  int64_t *out) {
    int64_t g = -1, reach = INT64_MIN, sum = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t i = order ? order[k] : k;
        if (i < 0 || i >= n) return SWEEP_BAD_ROW;
        int64_t here = group_of(groups, width, i);
        if (here != g) {
            if (g >= 0) out[g] += sum;
            if (here < 0 || here >= num_groups) return SWEEP_BAD_GROUP;
            g = here;
            reach = INT64_MIN;
            sum = 0;
        }
        int64_t s = start[i], e = end[i];
        int64_t from = s > reach ? s : reach;
        if (e > from) sum += e - from;
        if (e > reach) reach = e;
    }
    if (g >= 0) out[g] += sum;
    return SWEEP_OK;
}

static PyObject *group_unions(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer groups, start, end, out, order = {0};
    PyObject *order_object;
    if (!PyArg_ParseTuple(args, "y*y*y*Ow*", &groups, &start, &end, &order_object, &out))
        return NULL;
    Py_ssize_t n = start.len / 8, m = n, num_groups = out.len / 8;
    int ok = order_object == Py_None
             || PyObject_GetBuffer(order_object, &order, PyBUF_C_CONTIGUOUS) == 0;
    if (ok && order.obj) {
        m = order.len / 8;
        ok = check_size(&order, 8, m, "order");
    }
    int width = ok ? group_width(&groups, n) : 0;
    ok = width && check_size(&start, 8, n, "start") && check_size(&end, 8, n, "end")
         && check_size(&out, 8, num_groups, "out");
    int status = SWEEP_OK;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        status = unions(groups.buf, width, start.buf, end.buf, n, order.obj ? order.buf : NULL,
                        m, num_groups, out.buf);
        Py_END_ALLOW_THREADS
    }
    if (order.obj) PyBuffer_Release(&order);
    PyBuffer_Release(&groups);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    return report(status, num_groups);
}

/* Whether event i counts in the step database: classified, in a group, and not enclosed by
 * its parent of the same group with a type at least its own (step_db.py
 * `_enclosed_by_own_kind`); `parent` NULL where the nesting is not known. -1: its parent is
 * not one of the n events. */
static inline int counted(const int8_t *types, const void *groups, int width,
                          const void *parent, int parent_width, Py_ssize_t i, Py_ssize_t n) {
    int64_t g = group_of(groups, width, i);
    if (types[i] < 0 || g < 0) return 0;
    if (!parent) return 1;
    int64_t up = group_of(parent, parent_width, i);
    if (up >= n) return -1;
    return !(up >= 0 && group_of(groups, width, up) == g && types[up] >= types[i]);
}

static PyObject *counted_events(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer types, groups, parent = {0}, out = {0};
    PyObject *parent_object, *out_object;
    if (!PyArg_ParseTuple(args, "y*y*OO", &types, &groups, &parent_object, &out_object))
        return NULL;
    Py_ssize_t n = types.len, found = 0;
    int width = group_width(&groups, n), parent_width = 0;
    int ok = width != 0;
    if (ok && parent_object != Py_None) {
        ok = PyObject_GetBuffer(parent_object, &parent, PyBUF_C_CONTIGUOUS) == 0;
        parent_width = ok ? group_width(&parent, n) : 0;
        ok = parent_width != 0;
    }
    if (ok && out_object != Py_None)
        ok = PyObject_GetBuffer(out_object, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) == 0;
    int status = SWEEP_OK;
    if (ok) {
        const void *up = parent.obj ? parent.buf : NULL;
        int64_t *at = out.obj ? out.buf : NULL;
        Py_ssize_t room = out.obj ? out.len / 8 : 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int counts = counted(types.buf, groups.buf, width, up, parent_width, i, n);
            if (counts < 0) { status = SWEEP_BAD_GROUP; break; }
            if (!counts) continue;
            if (at) {
                if (found >= room) { status = SWEEP_BAD_ROW; break; }
                at[found] = i;
            }
            found++;
        }
        Py_END_ALLOW_THREADS
    }
    if (out.obj) PyBuffer_Release(&out);
    if (parent.obj) PyBuffer_Release(&parent);
    PyBuffer_Release(&types);
    PyBuffer_Release(&groups);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "counted_events: %s",
                            status == SWEEP_BAD_GROUP ? "a parent outside the events"
                                                      : "out is too short");
    return PyLong_FromSsize_t(found);
}

/* Per (group, plane) cell g * num_planes + p, the first start and last end of the group's
 * classified events on device plane p (step_db.py `_longest_core_spans`). */
static PyObject *core_spans(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer types, groups, plane, on_device, start, end, first, last;
    Py_ssize_t num_planes;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*nw*w*", &types, &groups, &plane, &on_device,
                          &start, &end, &num_planes, &first, &last))
        return NULL;
    Py_ssize_t n = types.len, cells = first.len / 8;
    int width = group_width(&groups, n);
    int plane_width = width ? group_width(&plane, n) : 0;
    int ok = plane_width && num_planes > 0 && check_size(&on_device, 1, n, "on_device")
             && check_size(&start, 8, n, "start") && check_size(&end, 8, n, "end")
             && check_size(&first, 8, cells, "first") && check_size(&last, 8, cells, "last")
             && cells % num_planes == 0;
    if (!ok && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "core_spans: cells are not groups x planes");
    int status = SWEEP_OK;
    if (ok) {
        const int8_t *type = types.buf;
        const uint8_t *device = on_device.buf;
        const int64_t *s = start.buf, *e = end.buf;
        int64_t *lo = first.buf, *hi = last.buf;
        Py_ssize_t num_groups = cells / num_planes;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!device[i] || type[i] < 0) continue;
            int64_t g = group_of(groups.buf, width, i);
            if (g < 0) continue;
            int64_t p = group_of(plane.buf, plane_width, i);
            if (g >= num_groups || p < 0 || p >= num_planes) { status = SWEEP_BAD_GROUP; break; }
            Py_ssize_t cell = (Py_ssize_t)(g * num_planes + p);
            if (s[i] < lo[cell]) lo[cell] = s[i];
            if (e[i] > hi[cell]) hi[cell] = e[i];
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&types);
    PyBuffer_Release(&groups);
    PyBuffer_Release(&plane);
    PyBuffer_Release(&on_device);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&first);
    PyBuffer_Release(&last);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "core_spans: a group or plane outside the cells");
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"core_spans", core_spans, METH_VARARGS,
     "core_spans(types, groups, plane, on_device, start, end, num_planes, first, last): per "
     "cell group * num_planes + plane, the least start and greatest end of the group's "
     "classified events on that device plane, folded into first and last (int64)."},
    {"counted_events", counted_events, METH_VARARGS,
     "counted_events(types, groups, parent, out) -> count: the events the step database "
     "counts (classified, grouped, not enclosed by a parent of their group and at least "
     "their type), their positions written to out (int64) unless it is None."},
    {"group_unions", group_unions, METH_VARARGS,
     "group_unions(groups, start, end, order, out): adds into out[g] the length of the union "
     "of group g's intervals, rows taken in `order` (None: as they are) sorted by (group, "
     "start)."},
    {"type_unions", type_unions, METH_VARARGS,
     "type_unions(types, groups, start, end, rows, begin, finish, valid, out): per group and "
     "type threshold t, the union of its events of type >= t clipped to its step, added into "
     "out[t * G + g], zero-length events taking the reference's sweep spans."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_step_sweep", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__step_sweep(void) { return PyModule_Create(&module); }
