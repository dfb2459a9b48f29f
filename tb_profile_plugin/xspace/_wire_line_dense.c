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
 * with decode_line. (What the walks do with each stat row, `line_row`, is _wire_walk.c's:
 * the compiler inlines it into the walk there.) */

#include "_wire.h"

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
    if (!wire_walk_line(buf, size, cols, h)) return cols->no_memory ? -1 : 0;
    Py_ssize_t n = cols->n_events;
    if (p->rows == 0) return 1;  /* no stats: nothing to code */
    d->strings = buf;
    d->n_strings = size;
    d->m = p->rows;
    d->num_rows = n;
    d->min_count = (n + 2 * slot_bytes) / row_bytes + 1;  /* (`_min_dense_count`) */
    wire_dense_settle(d, d->k, p->kind0, p->count, p->vmin, p->vmax, p->mixed, p->first_pairs);
    if (!wire_dense_prepare(d, &p->lanes)) return -1;
    p->k_length.item = p->longest <= 0xFF ? 1 : p->longest <= 0xFFFF ? 2 : 4;
    Py_ssize_t may_keep = line_may_keep(p);
    if (may_keep && !line_reserve_kept(p, may_keep)) return -1;
    cols->mode = WALK_CODE;
    cols->n_events = 0;
    if (!wire_walk_line(buf, size, cols, h)) return cols->no_memory ? -1 : 0;
    for (int s = 0; s < d->k; s++) {
        DenseStat *t = &d->st[s];
        int done = t->method == CODE_RANGE ? wire_dense_finish_range(d, t)
                 : t->method != CODE_NONE ? wire_dense_finish_hash(d, t) : 1;
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
    if (!wire_walk_line(buf, size, cols, h)) return cols->no_memory ? -1 : 0;
    return 1;
}

static void line_plan_free(LinePlan *p) {
    wire_dense_free(&p->d);
    free(p->k_row.data); free(p->k_meta.data); free(p->k_kind.data); free(p->k_value.data);
    free(p->k_length.data);
    free(p);
}

/* The plan handed over: (stat_ids, first_seen, pairs, per_stat (wire_dense_outputs), keep (uint8
 * by sorted rank: its rows stay sparse), and the sparse rows' row (int32), metadata_id
 * (int32), kind, value (int64) and length (uint8/uint16/int32 as the line's longest string
 * asks: `_narrowed_lengths`) columns, that length's width). */
static PyObject *line_plan_tuple(LinePlan *p) {
    DensePlan *d = &p->d;
    PyObject *parts[5] = {NULL}, *keep = NULL, *kept[5] = {NULL};
    if (!wire_dense_outputs(d, d->num_rows, parts)) goto fail;
    keep = PyBytes_FromStringAndSize(NULL, d->k);
    if (!keep) goto fail;
    for (int s = 0; s < d->k; s++) PyBytes_AS_STRING(keep)[d->order[s]] = (char)p->keep[s];
    Col *cols[5] = {&p->k_row, &p->k_meta, &p->k_kind, &p->k_value, &p->k_length};
    for (int j = 0; j < 5; j++) {
        if (!(kept[j] = wire_block_of(cols[j], p->n_kept))) goto fail;
    }
    return Py_BuildValue("NNNNNNNNNNi", parts[0], parts[1], parts[2], parts[4], keep, kept[0],
                         kept[1], kept[2], kept[3], kept[4], (int)p->k_length.item);
fail:
    for (int j = 0; j < 5; j++) { Py_XDECREF(parts[j]); Py_XDECREF(kept[j]); }
    Py_XDECREF(keep);
    return NULL;
}

PyObject *wire_decode_line_dense(PyObject *self, PyObject *args) {
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
        out[k] = k == 3 && !cols.has_occurrences ? Py_NewRef(Py_None) : wire_block_of(source[k], n);
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
    wire_free_columns(&cols);
    line_plan_free(p);
    return result;
}
