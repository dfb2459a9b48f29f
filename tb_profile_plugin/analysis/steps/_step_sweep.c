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
 * event_types(...): `classify`'s per-event rules (by name, plane, launch, shape, HLO op) in
 *   one pass, not a dozen masks over every event.
 * kernel_calls(...), assign(...), run_starts(...): xla_executions.py's kernels' host calls,
 *   the events' executions and the runs that make them, one pass each (a walk, not a search
 *   per event; no gathered copy per column).
 * plane_unions(...): type_unions of every GPU's own step database at once, or of the
 *   host's as one database of every plane (analysis/steps/core_step_dbs.py): the events
 *   counted once into (group, host or database) cells, each group's host events gathered and
 *   sorted once, then merged with each database's own.
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
    /* Per type, the greatest end of its longer events so far: one store per event; an
     * instant of type t reads the types >= t (instants are few beside the events). */
    int64_t reach[NUM_TYPES];
    for (int t = 0; t < NUM_TYPES; t++) reach[t] = INT64_MIN;
    for (Py_ssize_t i = 0; i < n;) {
        int64_t x = l->ev[i].start;
        Py_ssize_t j = i;
        int instants = 0;
        for (; j < n && l->ev[j].start == x; j++) {
            if (l->ev[j].end == x) {
                instants = 1;
                continue;
            }
            int t = (int)l->ev[j].type;
            if (l->ev[j].end > reach[t]) reach[t] = l->ev[j].end;
        }
        for (Py_ssize_t k = i; k < j && instants; k++) {
            if (l->ev[k].end != x) continue;
            for (int t = (int)l->ev[k].type; t < NUM_TYPES; t++)
                if (reach[t] > x) {
                    l->ev[k].end = INT64_MIN;
                    break;
                }
        }
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
        /* reach[t] never grows with t (as in mark_covered): from the event's type down, the
         * first threshold whose union already reaches e ends the climb */
        for (int t = (int)l->ev[k].type; t >= 0 && e > reach[t]; t--) {
            sum[t] += e - (s > reach[t] ? s : reach[t]);
            reach[t] = e;
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

/* Cell of event i in plane_unions: group * (K + 1) + 0 for a host event, + 1 + its plane's
 * database for a device event; -1 where no database counts it (unclassified, ungrouped, on a
 * plane without a database, or enclosed by its parent of its group and at least its type:
 * `_enclosed_by_own_kind` with its database's own types, where a parent counts only if it is
 * in that database too). SWEEP_CROSSING (negated, below -1) where a host event's parent is a
 * device event of one database among several: it encloses the event in that database and
 * not in the others; other errors likewise negated. */
enum { SWEEP_CROSSING = SWEEP_NO_MEMORY + 1 };

static inline int64_t plane_cell(const int8_t *types, const void *groups, int width,
                                 const void *plane, int plane_width, const uint8_t *device,
                                 const void *parent, int parent_width, const int64_t *slot,
                                 Py_ssize_t num_plane_ids, Py_ssize_t n, Py_ssize_t num_dbs,
                                 Py_ssize_t num_groups, Py_ssize_t i) {
    int t = types[i];
    int64_t g = group_of(groups, width, i);
    if (t < 0 || g < 0) return -1;
    if (t >= NUM_TYPES) return -SWEEP_BAD_TYPE - 1;
    if (g >= num_groups) return -SWEEP_BAD_GROUP - 1;
    int64_t bucket = 0;
    if (device[i]) {
        int64_t p = group_of(plane, plane_width, i);
        if (p < 0 || p >= num_plane_ids) return -SWEEP_BAD_GROUP - 1;
        if (slot[p] < 0) return -1;
        bucket = slot[p] + 1;
    }
    if (parent) {
        int64_t up = group_of(parent, parent_width, i);
        if (up >= n) return -SWEEP_BAD_ROW - 1;
        if (up >= 0 && group_of(groups, width, up) == g && types[up] >= t) {
            if (!device[up]) return -1;  /* a host parent is in every database */
            int64_t q = group_of(plane, plane_width, up);
            if (q < 0 || q >= num_plane_ids) return -SWEEP_BAD_GROUP - 1;
            if (slot[q] >= 0) {  /* (else in no database: it encloses nothing) */
                if (bucket) {
                    if (slot[q] + 1 == bucket) return -1;  /* in the event's database */
                } else if (num_dbs == 1) {
                    return -1;  /* in the host event's one database */
                } else {
                    return -SWEEP_CROSSING - 1;
                }
            }
        }
    }
    return g * (num_dbs + 1) + bucket;
}

/* Gathers the rows [lo, hi) of `rows` into local->ev from offset `at`; returns whether one
 * is an instant and raises *last_end to their greatest end. */
static int gather(Local *local, Py_ssize_t at, const uint32_t *rows, Py_ssize_t lo,
                  Py_ssize_t hi, const int8_t *types, const int64_t *start, const int64_t *end,
                  int64_t *last_end) {
    int has_instant = 0;
    for (Py_ssize_t k = lo; k < hi; k++) {
        uint32_t i = rows[k];
        Event *e = &local->ev[at + k - lo];
        e->type = types[i];
        e->start = start[i];
        e->end = end[i];
        has_instant |= end[i] == start[i];
        if (end[i] > *last_end) *last_end = end[i];
    }
    return has_instant;
}

/* plane_unions' run without the GIL: the events counted into (group, host or database)
 * cells, then per group its host events gathered and sorted once, and per database its own
 * device events gathered, sorted and merged with them: `sweep` of each database's events. */
static int plane_sweep(const int8_t *types, const void *groups, int width, const void *plane,
                       int plane_width, const uint8_t *device, const void *parent,
                       int parent_width, const int64_t *start, const int64_t *end,
                       Py_ssize_t n, const int64_t *slot, Py_ssize_t num_plane_ids,
                       Py_ssize_t num_dbs, const int64_t *begin, const int64_t *finish,
                       const uint8_t *valid, Py_ssize_t num_groups, int64_t *out) {
    if ((uint64_t)n > UINT32_MAX) return SWEEP_CROSSING;  /* (rows are 4 bytes: the caller
                                                              takes the per-database way) */
    Py_ssize_t width_cells = num_dbs + 1, cells = num_groups * width_cells;
    Py_ssize_t *first = calloc((size_t)cells + 1, sizeof(Py_ssize_t));
    if (!first) return SWEEP_NO_MEMORY;
    int status = SWEEP_OK;
#define CELL(i) plane_cell(types, groups, width, plane, plane_width, device, parent, \
                           parent_width, slot, num_plane_ids, n, num_dbs, num_groups, i)
    /* A line's events come in runs of one cell (one group): each run is counted, and its
     * rows placed, with the cell's count in a register (not a store and load per event). */
    int64_t run_cell = -1;
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = CELL(i);
        if (c < -1) { status = (int)(-c - 1); break; }
        if (c < 0) continue;
        if (c != run_cell) {
            if (run_cell >= 0) first[run_cell + 1] += run;
            run_cell = c;
            run = 0;
        }
        run++;
    }
    if (run_cell >= 0) first[run_cell + 1] += run;
    uint32_t *rows = NULL;
    if (status == SWEEP_OK) {
        for (Py_ssize_t c = 0; c < cells; c++) first[c + 1] += first[c];
        rows = malloc((size_t)(first[cells] ? first[cells] : 1) * sizeof(uint32_t));
        if (!rows) status = SWEEP_NO_MEMORY;
    }
    if (status == SWEEP_OK) {  /* (first[c] ends as cell c + 1's start) */
        Py_ssize_t at = 0;
        run_cell = -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t c = CELL(i);
            if (c < 0) continue;
            if (c != run_cell) {
                if (run_cell >= 0) first[run_cell] = at;
                run_cell = c;
                at = first[c];
            }
            rows[at++] = (uint32_t)i;
        }
        if (run_cell >= 0) first[run_cell] = at;
    }
#undef CELL
    Local host = {0}, own = {0}, both = {0};
    Py_ssize_t table = (Py_ssize_t)(NUM_TYPES + 1) * num_groups;
    for (Py_ssize_t g = 0; g < num_groups && status == SWEEP_OK; g++) {
        Py_ssize_t cell = g * width_cells;
        Py_ssize_t lo = cell ? first[cell - 1] : 0, h = first[cell] - lo;
        int any_valid = 0;
        for (Py_ssize_t k = 0; k < num_dbs; k++) any_valid |= valid[k * num_groups + g];
        if (!any_valid) continue;  /* no database's step: none of its time counts */
        if (!grow(&host, h)) { status = SWEEP_NO_MEMORY; break; }
        int64_t host_last = INT64_MIN;
        int host_instant = gather(&host, 0, rows, lo, lo + h, types, start, end, &host_last);
        if (h) sort_by_start(&host, h);
        for (Py_ssize_t k = 0; k < num_dbs; k++) {
            Py_ssize_t at = k * num_groups + g;
            Py_ssize_t d_lo = first[cell + k], d = first[cell + k + 1] - d_lo;
            if (!valid[at] || h + d == 0) continue;
            if (!grow(&own, d) || !grow(&both, h + d)) { status = SWEEP_NO_MEMORY; break; }
            int64_t last_end = host_last;
            int has_instant = host_instant
                              | gather(&own, 0, rows, d_lo, d_lo + d, types, start, end,
                                       &last_end);
            if (d) sort_by_start(&own, d);
            Py_ssize_t i = 0, j = 0, m = 0;  /* merge by start (equal starts: any order) */
            while (i < h && j < d)
                both.ev[m++] = own.ev[j].start < host.ev[i].start ? own.ev[j++] : host.ev[i++];
            while (i < h) both.ev[m++] = host.ev[i++];
            while (j < d) both.ev[m++] = own.ev[j++];
            if (has_instant) {
                mark_covered(&both, m);
                instant_ends(&both, m, last_end);
            }
            add_unions(&both, m, begin[at], finish[at], out + k * table, g, num_groups);
        }
    }
    free(first);
    free(rows);
    free(host.ev); free(host.spare); free(host.runs);
    free(own.ev); free(own.spare); free(own.runs);
    free(both.ev); free(both.spare); free(both.runs);
    return status;
}

static PyObject *plane_unions(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer types, groups, plane, device, parent = {0}, start, end, slot, begin, finish,
              valid, out;
    PyObject *parent_object;
    Py_ssize_t num_dbs;
    if (!PyArg_ParseTuple(args, "y*y*y*y*Oy*y*y*ny*y*y*w*", &types, &groups, &plane, &device,
                          &parent_object, &start, &end, &slot, &num_dbs, &begin, &finish,
                          &valid, &out))
        return NULL;
    Py_ssize_t n = types.len, num_plane_ids = slot.len / 8;
    Py_ssize_t num_groups = num_dbs > 0 ? valid.len / num_dbs : 0;
    int width = group_width(&groups, n);
    int plane_width = width ? group_width(&plane, n) : 0, parent_width = 0;
    int ok = plane_width != 0;
    if (ok && parent_object != Py_None) {
        ok = PyObject_GetBuffer(parent_object, &parent, PyBUF_C_CONTIGUOUS) == 0;
        parent_width = ok ? group_width(&parent, n) : 0;
        ok = parent_width != 0;
    }
    if (ok) {  /* K databases of G groups: begin is K * G, out K * (NUM_TYPES + 1) * G */
        ok = num_dbs > 0 && check_size(&valid, 1, num_dbs * num_groups, "valid")
             && check_size(&device, 1, n, "on_device") && check_size(&start, 8, n, "start")
             && check_size(&end, 8, n, "end") && check_size(&slot, 8, num_plane_ids, "slot")
             && check_size(&begin, 8, valid.len, "begin")
             && check_size(&finish, 8, valid.len, "finish")
             && check_size(&out, 8, (NUM_TYPES + 1) * valid.len, "out");
        if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "num_dbs: expected > 0");
    }
    int status = SWEEP_OK;
    if (ok && num_groups) {
        Py_BEGIN_ALLOW_THREADS
        status = plane_sweep(types.buf, groups.buf, width, plane.buf, plane_width, device.buf,
                             parent.obj ? parent.buf : NULL, parent_width, start.buf, end.buf,
                             n, slot.buf, num_plane_ids, num_dbs, begin.buf, finish.buf,
                             valid.buf, num_groups, out.buf);
        Py_END_ALLOW_THREADS
    }
    if (parent.obj) PyBuffer_Release(&parent);
    PyBuffer_Release(&types);
    PyBuffer_Release(&groups);
    PyBuffer_Release(&plane);
    PyBuffer_Release(&device);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&slot);
    PyBuffer_Release(&begin);
    PyBuffer_Release(&finish);
    PyBuffer_Release(&valid);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    if (status == SWEEP_CROSSING) Py_RETURN_FALSE;
    if (status != SWEEP_OK) return report(status, num_groups);
    Py_RETURN_TRUE;
}

/* Code `code` (-1: none) of a per-event column of `width` bytes into a table of `size`
 * entries whose last is "none"; -1 where the code is outside the table. */
static inline Py_ssize_t table_row(const void *codes, int width, Py_ssize_t i, Py_ssize_t size) {
    int64_t code = codes ? group_of(codes, width, i) : -1;
    if (code < 0) return size - 1;
    return code < size - 1 ? (Py_ssize_t)code : -1;
}

/* EventType numbers (step_db.py EventType) the rules below read or write. */
enum { HOST_COMPUTE = 1, HOST_PREPARE = 5, DEVICE_COLLECTIVES = 6, DEVICE_TO_DEVICE = 8,
       DEVICE_COMPUTE_32 = 10, DEVICE_COMPUTE_16 = 11, DEVICE_WAIT_DEVICE = 12 };
/* Bits of a canonical text's class (step_db.py `classify`). */
enum { TEXT_STARTS_TRANSFER = 1, TEXT_WAITS_TRANSFER = 2, TEXT_COLLECTIVE = 4 };

/* One optional per-event column: its buffer and width (buf NULL: absent). */
typedef struct {
    Py_buffer view;
    int width;
} Column;

static int optional_column(PyObject *object, Column *column, Py_ssize_t n, int is_bool) {
    column->view.buf = NULL;
    column->view.obj = NULL;
    column->width = 0;
    if (object == Py_None) return 1;
    if (PyObject_GetBuffer(object, &column->view, PyBUF_C_CONTIGUOUS) != 0) return 0;
    column->width = is_bool ? (check_size(&column->view, 1, n, "mask") ? 1 : 0)
                            : group_width(&column->view, n);
    return column->width != 0;
}

/* event_types: step_db.py `classify`'s per-event rules in one pass (its numpy version is the
 * reference): by name and plane, then on the host a launch's compute -> kernel launch, on a
 * device the shape's or HLO's 16-bit compute, XLA's transfers and their waits, collectives. */
static PyObject *event_types(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer name_id, plane, accelerator, shape_half, text_class, host_type, device_type,
              name_collective, out;
    PyObject *objects[5];
    int has_device;
    if (!PyArg_ParseTuple(args, "y*y*y*OOy*OOOy*y*y*y*pw*", &name_id, &plane, &accelerator,
                          &objects[0], &objects[1], &shape_half, &objects[2], &objects[3],
                          &objects[4], &text_class, &host_type, &device_type,
                          &name_collective, &has_device, &out))
        return NULL;
    Py_ssize_t n = out.len, num_names = host_type.len, num_planes = accelerator.len;
    Column launch, shape, low, hlo_op, op_type;
    Column *columns[5] = {&launch, &shape, &low, &hlo_op, &op_type};
    int name_width = group_width(&name_id, n);
    int plane_width = name_width ? group_width(&plane, n) : 0;
    int ok = plane_width && check_size(&device_type, 1, num_names, "device_type")
             && check_size(&name_collective, 1, num_names, "name_collective")
             && shape_half.len > 0 && text_class.len > 0;
    for (int k = 0; k < 5; k++) columns[k]->view.obj = NULL;
    for (int k = 0; k < 5 && ok; k++)
        ok = optional_column(objects[k], columns[k], n, k == 0 || k == 2);
    if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "event_types: bad tables");
    int status = SWEEP_OK;
    if (ok) {
        const uint8_t *accel = accelerator.buf, *half = shape_half.buf, *text = text_class.buf;
        const uint8_t *is_launch = launch.view.buf, *is_low = low.view.buf;
        const uint8_t *coll = name_collective.buf;
        const int8_t *host = host_type.buf, *device = device_type.buf;
        int8_t *types = out.buf;
        Py_ssize_t num_shapes = shape_half.len, num_texts = text_class.len;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t name = group_of(name_id.buf, name_width, i);
            int64_t p = group_of(plane.buf, plane_width, i);
            if (name < 0 || name >= num_names || p < 0 || p >= num_planes) {
                status = SWEEP_BAD_ROW;
                break;
            }
            int t;
            if (!accel[p]) {
                t = host[name];
                if (has_device && t == HOST_COMPUTE && is_launch && is_launch[i])
                    t = HOST_PREPARE;
                types[i] = (int8_t)t;
                continue;
            }
            t = device[name];
            if (t == DEVICE_COMPUTE_16 || t == DEVICE_COMPUTE_32) {
                Py_ssize_t s = table_row(shape.view.buf, shape.width, i, num_shapes);
                if (s < 0) { status = SWEEP_BAD_ROW; break; }
                if (s < num_shapes - 1) t = half[s] ? DEVICE_COMPUTE_16 : DEVICE_COMPUTE_32;
                if (t == DEVICE_COMPUTE_32 && is_low && is_low[i]) t = DEVICE_COMPUTE_16;
            }
            Py_ssize_t h = table_row(hlo_op.view.buf, hlo_op.width, i, num_texts);
            Py_ssize_t o = table_row(op_type.view.buf, op_type.width, i, num_texts);
            if (h < 0 || o < 0) { status = SWEEP_BAD_ROW; break; }
            if (t == DEVICE_COMPUTE_16 || t == DEVICE_COMPUTE_32) {
                if (text[h] & TEXT_WAITS_TRANSFER) t = DEVICE_WAIT_DEVICE;
                else if (text[h] & TEXT_STARTS_TRANSFER) t = DEVICE_TO_DEVICE;
            }
            if (t >= 0 && (coll[name] || (text[h] & TEXT_COLLECTIVE) || (text[o] & TEXT_COLLECTIVE)))
                t = DEVICE_COLLECTIVES;
            types[i] = (int8_t)t;
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 5; k++)
        if (columns[k]->view.obj) PyBuffer_Release(&columns[k]->view);
    PyBuffer_Release(&name_id);
    PyBuffer_Release(&plane);
    PyBuffer_Release(&accelerator);
    PyBuffer_Release(&shape_half);
    PyBuffer_Release(&text_class);
    PyBuffer_Release(&host_type);
    PyBuffer_Release(&device_type);
    PyBuffer_Release(&name_collective);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "event_types: a name, plane or code outside "
                            "its table");
    Py_RETURN_NONE;
}

/* kernel_calls(out, call_of_id, low, size, correlation, on_device, module, index_of_code):
 * xla_executions.py `_kernel_calls_by_table` in one pass: each device event whose module has
 * calls (index_of_code[module] >= 0; module -1 reads the table's last entry) and whose
 * correlation id is in [low, low + size) takes call_of_id[code * size + id - low]. */
static PyObject *kernel_calls(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer out, call_of_id, correlation, on_device, module, index_of_code;
    long long low, size;
    if (!PyArg_ParseTuple(args, "w*y*LLy*y*y*y*", &out, &call_of_id, &low, &size, &correlation,
                          &on_device, &module, &index_of_code))
        return NULL;
    Py_ssize_t n = out.len / 8, num_codes = index_of_code.len / 4;
    int module_width = group_width(&module, n);
    int ok = module_width && size >= 0 && num_codes > 0
             && check_size(&out, 8, n, "out") && check_size(&correlation, 8, n, "correlation")
             && check_size(&on_device, 1, n, "on_device")
             && check_size(&index_of_code, 4, num_codes, "index_of_code");
    if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "kernel_calls: bad sizes");
    int status = SWEEP_OK;
    if (ok) {
        int64_t *calls = out.buf;
        const int64_t *table = call_of_id.buf, *ids = correlation.buf;
        const uint8_t *device = on_device.buf;
        const int32_t *code_of = index_of_code.buf;
        Py_ssize_t entries = call_of_id.len / 8;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!device[i] || ids[i] < low || ids[i] - low >= size) continue;
            int64_t m = group_of(module.buf, module_width, i);
            if (m < 0) m = num_codes - 1;
            if (m >= num_codes) { status = SWEEP_BAD_ROW; break; }
            int64_t code = code_of[m];
            if (code < 0) continue;
            int64_t at = code * size + (ids[i] - low);
            if (at >= entries) { status = SWEEP_BAD_ROW; break; }
            calls[i] = table[at];
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&call_of_id);
    PyBuffer_Release(&correlation);
    PyBuffer_Release(&on_device);
    PyBuffer_Release(&module);
    PyBuffer_Release(&index_of_code);
    if (!ok) return NULL;
    if (status != SWEEP_OK)
        return PyErr_Format(PyExc_ValueError, "kernel_calls: a module or call outside the "
                            "tables");
    Py_RETURN_NONE;
}

/* assign(start, begin, end, first, out): xla_executions.py `_assign` for one plane: out[k]
 * (int32) = first + the last execution j with begin[j] <= start[k] (begin ascending), where
 * start[k] < end[j]; untouched elsewhere. A line's starts ascend, so the execution is walked
 * to, not searched (a binary search where a start goes back). */
static PyObject *assign(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer start, begin, end, out;
    Py_ssize_t first;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*", &start, &begin, &end, &first, &out))
        return NULL;
    Py_ssize_t n = start.len / 8, e = begin.len / 8;
    int ok = check_size(&start, 8, n, "start") && check_size(&begin, 8, e, "begin")
             && check_size(&end, 8, e, "end") && check_size(&out, 4, n, "out")
             && first >= 0 && first + e <= INT32_MAX;
    if (!ok && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "assign: bad first");
    if (ok && e) {
        const int64_t *s = start.buf, *b = begin.buf, *f = end.buf;
        int32_t *found = out.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t j = -1;  /* the last execution begun at or before the previous start */
        int64_t previous = INT64_MIN;
        for (Py_ssize_t k = 0; k < n; k++) {
            int64_t x = s[k];
            if (x < previous) {  /* back in time: the last begin <= x by bisection */
                Py_ssize_t lo = 0, hi = e;
                while (lo < hi) {
                    Py_ssize_t mid = lo + (hi - lo) / 2;
                    if (b[mid] <= x) lo = mid + 1; else hi = mid;
                }
                j = lo - 1;
            } else {
                while (j + 1 < e && b[j + 1] <= x) j++;
            }
            previous = x;
            if (j >= 0 && x < f[j]) found[k] = (int32_t)(first + j);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&start);
    PyBuffer_Release(&begin);
    PyBuffer_Release(&end);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* run_starts(order, out, columns): xla_executions.py `_execution_runs`' run starts in one
 * pass: out[k] (bool) = k == 0 or some column differs between rows order[k - 1] and
 * order[k] (columns: a tuple of 1, 2, 4 or 8-byte signed integer columns, one value per row;
 * no gathered copy of each). */
static PyObject *run_starts(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer order, out;
    PyObject *columns;
    if (!PyArg_ParseTuple(args, "y*w*O!", &order, &out, &PyTuple_Type, &columns))
        return NULL;
    Py_ssize_t m = order.len / 8, num_columns = PyTuple_GET_SIZE(columns), n = 0;
    Column cols[3];
    int ok = num_columns >= 1 && num_columns <= 3 && check_size(&order, 8, m, "order")
             && check_size(&out, 1, m, "out");
    int opened = 0;
    for (Py_ssize_t c = 0; c < num_columns && ok; c++) {
        cols[c].view.obj = NULL;
        ok = PyObject_GetBuffer(PyTuple_GET_ITEM(columns, c), &cols[c].view,
                                PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0;
        if (!ok) break;
        opened++;
        Py_ssize_t itemsize = cols[c].view.itemsize;
        n = cols[c].view.len / (itemsize ? itemsize : 1);
        ok = (itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8)
             && (c == 0 || n * itemsize == cols[c].view.len);
        cols[c].width = (int)itemsize;
        if (ok && c > 0 && cols[0].view.len / cols[0].width != n) ok = 0;
    }
    if (!ok && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "run_starts: 1 to 3 integer columns of one length");
    int status = SWEEP_OK;
    if (ok && m) {
        const int64_t *seq = order.buf;
        uint8_t *start = out.buf;
        Py_BEGIN_ALLOW_THREADS
        start[0] = 1;
        if (seq[0] < 0 || seq[0] >= n) status = SWEEP_BAD_ROW;
        for (Py_ssize_t k = 1; k < m && status == SWEEP_OK; k++) {
            int64_t i = seq[k - 1], j = seq[k];
            if (j < 0 || j >= n) { status = SWEEP_BAD_ROW; break; }
            uint8_t differs = 0;
            for (Py_ssize_t c = 0; c < num_columns; c++)
                differs |= group_of(cols[c].view.buf, cols[c].width, i)
                           != group_of(cols[c].view.buf, cols[c].width, j);
            start[k] = differs;
        }
        Py_END_ALLOW_THREADS
    }
    for (int c = 0; c < opened; c++) PyBuffer_Release(&cols[c].view);
    PyBuffer_Release(&order);
    PyBuffer_Release(&out);
    if (!ok) return NULL;
    if (status != SWEEP_OK) return PyErr_Format(PyExc_ValueError, "run_starts: a row outside "
                                                "the columns");
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"assign", assign, METH_VARARGS,
     "assign(start, begin, end, first, out): per event, first + the last execution begun at "
     "or before its start, where it has not ended, into out (int32); untouched elsewhere."},
    {"core_spans", core_spans, METH_VARARGS,
     "core_spans(types, groups, plane, on_device, start, end, num_planes, first, last): per "
     "cell group * num_planes + plane, the least start and greatest end of the group's "
     "classified events on that device plane, folded into first and last (int64)."},
    {"counted_events", counted_events, METH_VARARGS,
     "counted_events(types, groups, parent, out) -> count: the events the step database "
     "counts (classified, grouped, not enclosed by a parent of their group and at least "
     "their type), their positions written to out (int64) unless it is None."},
    {"event_types", event_types, METH_VARARGS,
     "event_types(name_id, plane, accelerator, launch, shape, shape_half, low, hlo_op, op_type, "
     "text_class, host_type, device_type, name_collective, has_device, out): step_db.py "
     "classify's per-event types (before markers) into out (int8); None for absent columns."},
    {"group_unions", group_unions, METH_VARARGS,
     "group_unions(groups, start, end, order, out): adds into out[g] the length of the union "
     "of group g's intervals, rows taken in `order` (None: as they are) sorted by (group, "
     "start)."},
    {"kernel_calls", kernel_calls, METH_VARARGS,
     "kernel_calls(out, call_of_id, low, size, correlation, on_device, module, index_of_code): "
     "xla_executions.py `_kernel_calls_by_table` in one pass."},
    {"plane_unions", plane_unions, METH_VARARGS,
     "plane_unions(types, groups, plane, on_device, parent, start, end, slot, num_dbs, begin, "
     "finish, valid, out) -> bool: type_unions of K = num_dbs databases at once, database k "
     "counting the host's events and those of the planes p with slot[p] == k; begin, finish "
     "and valid K x G, out K x (NUM_TYPES + 1) x G. False (out unusable) where a parent on "
     "another device plane encloses an event: the caller builds them one by one."},
    {"run_starts", run_starts, METH_VARARGS,
     "run_starts(order, out, columns): out[k] = k == 0 or some column of the tuple differs "
     "between rows order[k - 1] and order[k] (bool)."},
    {"type_unions", type_unions, METH_VARARGS,
     "type_unions(types, groups, start, end, rows, begin, finish, valid, out): per group and "
     "type threshold t, the union of its events of type >= t clipped to its step, added into "
     "out[t * G + g], zero-length events taking the reference's sweep spans."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_step_sweep", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__step_sweep(void) { return PyModule_Create(&module); }
