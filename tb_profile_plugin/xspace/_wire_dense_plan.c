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

#include "_wire.h"

void wire_dense_free(DensePlan *d) {
    for (int s = 0; s < DENSE_MAX_STATS; s++) {
        DenseStat *t = &d->st[s];
        free(t->provisional); free(t->present); free(t->tmp); wire_hash_free(&t->hash);
        free(t->table); free(t->table_len); free(t->codes);
    }
    free(d->rank);
    free(d->kept);
}

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
    wire_dense_settle(d, k, kind0, count, vmin, vmax, mixed, first_pairs);
    return 1;
}

/* Pass one's verdicts: each stat's kind, checks, count and range, the sorted ranks and the
 * pairs by sorted rank. */
void wire_dense_settle(DensePlan *d, int k, const uint8_t *kind0, const int64_t *count,
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

/* How each stat is coded and where pass two writes it; 0 when memory ran out. */
int wire_dense_prepare(DensePlan *d, DenseLanes *lanes) {
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
            int done = wire_dense_slow_row(d, &d->st[s], r, v, length);
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
int wire_dense_finish_range(DensePlan *d, DenseStat *t) {
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
int wire_dense_finish_hash(DensePlan *d, DenseStat *t) {
    int text = t->method == CODE_STRING;
    DenseHash *h = &t->hash;
    size_t distinct = h->n_entries;
    if (text)
        for (size_t e = 0; e < distinct; e++)
            if (h->entries[e].length > 8)
                h->entries[e].key = (int64_t)(intptr_t)(d->strings + h->entries[e].value);
    int (*cmp)(const void *, const void *) = text ? wire_cmp_string_entry : wire_cmp_int_entry;
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
    int done = lanes && wire_dense_prepare(d, lanes) ? dense_second_pass(d, lanes) : 0;
    free(lanes);
    for (int s = 0; s < d->k && done == 1; s++) {
        DenseStat *t = &d->st[s];
        if (t->method == CODE_RANGE) done = wire_dense_finish_range(d, t);
        else if (t->method != CODE_NONE) done = wire_dense_finish_hash(d, t);
    }
    if (done == 1) return 1;
    d->no_memory = done == 0;
    return 0;
}

/* The plan's stat ids, first rows, pairs and sorted ranks (each by sorted rank, as bytes) and
 * its stats by sorted rank: None or (count, kind, table, table_lengths, codes or None,
 * width), their arrays handed over as Blocks. New references in out[0..4]; 0 on failure
 * (the caller drops what was made). */
int wire_dense_outputs(DensePlan *d, Py_ssize_t num_rows, PyObject **out) {
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
            PyObject *table = wire_block_from(t->table, t->n_table * 8);
            t->table = NULL;
            PyObject *lens = table ? wire_block_from(t->table_len, t->n_table * 4) : NULL;
            t->table_len = NULL;
            PyObject *codes = !lens ? NULL
                              : t->codes ? wire_block_from(t->codes, num_rows * t->width)
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

PyObject *wire_dense_plan(PyObject *self, PyObject *args) {
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
    if (!wire_dense_outputs(d, num_rows, parts)) goto fail;
    rank = wire_block_from(d->rank, m);
    d->rank = NULL;
    kept = rank ? wire_block_from(d->kept, d->n_kept * 8) : NULL;
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
        wire_dense_free(d);
        free(d);
    }
    PyBuffer_Release(&row); PyBuffer_Release(&ids); PyBuffer_Release(&kind);
    PyBuffer_Release(&value); PyBuffer_Release(&length); PyBuffer_Release(&strings);
    return result;
}

/* rows_except(rank, dropped) -> int64 positions of the rows whose rank (uint8) is not marked
 * in `dropped` (uint8 per rank): the rows a line keeps sparse. */
PyObject *wire_rows_except(PyObject *self, PyObject *args) {
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
    return wire_block_from(out, count * 8);
}
