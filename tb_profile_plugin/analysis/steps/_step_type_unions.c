/* The step database's per-type unions: of one database (type_unions), of several at once
 * (plane_unions), and a union per group (group_unions), with the passes over one group's
 * events they share: sort by start, the instants' spans, the unions per type threshold
 * (see _step_sweep.c). */
#include "_step_sweep.h"

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

PyObject *sweep_type_unions(PyObject *Py_UNUSED(self), PyObject *args) {
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

PyObject *sweep_group_unions(PyObject *Py_UNUSED(self), PyObject *args) {
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

PyObject *sweep_plane_unions(PyObject *Py_UNUSED(self), PyObject *args) {
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
    for (Py_ssize_t p = 0; ok && p < num_plane_ids; p++) {  /* -1 (none) or a database */
        if (((const int64_t *)slot.buf)[p] >= num_dbs) {
            PyErr_SetString(PyExc_ValueError, "slot: a database past num_dbs");
            ok = 0;
        }
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
