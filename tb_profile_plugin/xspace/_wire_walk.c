/* The walk of one encoded XLine's wire bytes (decode_line's, and decode_line_dense's
 * passes): each event into the event columns, each stat row into the stat columns (the
 * narrowed id and length columns widened as needed) or, in decode_line_dense's passes
 * (_wire_line_dense.c), seen, coded or kept a row at a time (`line_row`). The per-row work
 * of both stays in this one source, for the compiler to inline it into the walk. Runs
 * without the GIL. */
#include "_wire.h"

/* The column's first `filled` entries widened in place to `item` bytes each (a wider item
 * than now): integers of 4 bytes sign-extended to 8 (metadata ids), of 1 or 2 bytes
 * zero-extended to 2 or 4 (lengths). The entries are moved from the last one back, so that
 * no entry is overwritten before it is read. 0 when memory ran out. */
static int col_widen(Col *c, size_t filled, size_t item) {
    if (c->cap) {
        if (c->cap > SIZE_MAX / item) return 0;
        char *grown = realloc(c->data, c->cap * item);
        if (!grown) return 0;
        c->data = grown;
    }
    size_t old = c->item;
    c->item = item;
    for (size_t k = filled; k-- > 0;) {
        if (old == 4) ((int64_t *)c->data)[k] = ((const int32_t *)c->data)[k];
        else if (old == 1 && item == 2) ((uint16_t *)c->data)[k] = ((const uint8_t *)c->data)[k];
        else if (old == 1) ((int32_t *)c->data)[k] = ((const uint8_t *)c->data)[k];
        else ((int32_t *)c->data)[k] = ((const uint16_t *)c->data)[k];
    }
    return 1;
}

/* Entry `i` of an id column kept as int32 while every id fits (`_narrowed_ids` in
 * decode.py), widened to int64 at the first that does not. 0 when memory ran out. */
static inline int put_id(Col *c, size_t i, int64_t id) {
    if (c->item == 4 && (id < INT32_MIN || id > INT32_MAX) && !col_widen(c, i, 8)) return 0;
    if (c->item == 4) ((int32_t *)c->data)[i] = (int32_t)id;
    else ((int64_t *)c->data)[i] = id;
    return 1;
}

/* Entry `i` of a length column kept as uint8, then uint16, while every length fits
 * (`_narrowed_lengths` in decode.py), else int32. 0 when memory ran out. */
static inline int put_length(Col *c, size_t i, int32_t length) {
    size_t need = length <= 0xFF ? 1 : length <= 0xFFFF ? 2 : 4;
    if (need > c->item && !col_widen(c, i, need)) return 0;
    if (c->item == 1) ((uint8_t *)c->data)[i] = (uint8_t)length;
    else if (c->item == 2) ((uint16_t *)c->data)[i] = (uint16_t)length;
    else ((int32_t *)c->data)[i] = length;
    return 1;
}

static inline int line_row(Columns *cols, int mode, int32_t event_index, int64_t meta,
                           uint8_t kind, int64_t value, int32_t length);

/* A tag's field number and wire type as one key (field << 3 | wire type), compared with
 * TAG(field, wire type) at once: the field as the unsigned int of tag >> 3, as the walk has
 * always read it. (The event's stats tested first, then the rest: of every decode pass, the
 * stat decode was 20-25% less CPU time so; see `decode_stat`'s usual stat too.) */
#define TAG_KEY(tag) ((((uint64_t)(unsigned)((tag) >> 3)) << 3) | ((tag) & 7))
#define TAG(field, wt) ((uint64_t)(field) << 3 | (wt))

/* Decodes one XStat in [p, end) into the stat columns (or the pass `mode`'s row). */
static inline int decode_stat(
    Reader *outer, const uint8_t *p, const uint8_t *end, Columns *cols, int32_t event_index,
    int mode) {
    Reader r = {p, end, outer->base, 0};
    int64_t meta = 0, value = 0;
    int32_t length = 0;
    uint8_t kind = 0;
    /* The usual stat: its id of one byte, then an integer value (the loop's first two
     * rounds, as the loop does them). */
    if (r.end - r.p >= 4 && r.p[0] == TAG(1, 0) && r.p[1] < 0x80) {
        meta = r.p[1];
        uint8_t t = r.p[2];
        r.p += 2;
        if (t == TAG(3, 0) || t == TAG(4, 0) || t == TAG(7, 0)) {
            r.p++;
            value = (int64_t)read_varint(&r);
            if (r.error) return 0;
            kind = t == TAG(3, 0) ? 2 : t == TAG(4, 0) ? 3 : 6;
        }
    }
    while (r.p < r.end) {
        uint64_t tag = read_varint(&r);
        if (r.error) return 0;
        uint64_t key = TAG_KEY(tag);
        if (key == TAG(1, 0)) meta = (int64_t)read_varint(&r);
        else if (key == TAG(2, 1)) {
            if (r.end - r.p < 8) return 0;
            memcpy(&value, r.p, 8); r.p += 8; kind = 1;
        }
        else if (key == TAG(3, 0) || key == TAG(4, 0) || key == TAG(7, 0)) {
            value = (int64_t)read_varint(&r);
            kind = key == TAG(3, 0) ? 2 : key == TAG(4, 0) ? 3 : 6;
        }
        else if (key == TAG(5, 2) || key == TAG(6, 2)) {
            uint64_t n = read_varint(&r);
            if (r.error || n > (uint64_t)(r.end - r.p) || n > INT32_MAX) return 0;
            value = (int64_t)(r.p - r.base); length = (int32_t)n; r.p += n;
            kind = key == TAG(5, 2) ? 4 : 5;
        }
        else if (!skip_value(&r, (unsigned)(tag & 7))) return 0;
        if (r.error) return 0;
    }
    if (mode != WALK_ROWS) return line_row(cols, mode, event_index, meta, kind, value, length);
    Py_ssize_t i = cols->n_stats;
    if ((size_t)i >= cols->st_kind.cap &&  /* (the five grow together: one test a row) */
        (!col_reserve(&cols->st_event, i + 1) || !col_reserve(&cols->st_meta, i + 1) ||
         !col_reserve(&cols->st_kind, i + 1) || !col_reserve(&cols->st_value, i + 1) ||
         !col_reserve(&cols->st_length, i + 1))) {
        cols->no_memory = 1;
        return 0;
    }
    if (!put_id(&cols->st_meta, (size_t)i, meta) ||
        !put_length(&cols->st_length, (size_t)i, length)) {
        cols->no_memory = 1;
        return 0;
    }
    ((int32_t *)cols->st_event.data)[i] = event_index;
    ((uint8_t *)cols->st_kind.data)[i] = kind;
    ((int64_t *)cols->st_value.data)[i] = value;
    cols->n_stats++;
    return 1;
}

/* Decodes one XEvent in [p, end) into the event columns (or, once they are written, its
 * stats alone: the passes after WALK_SEE). */
static inline int decode_event(
    Reader *outer, const uint8_t *p, const uint8_t *end, Columns *cols, int mode) {
    Reader r = {p, end, outer->base, 0};
    int64_t meta = 0, offset = 0, duration = 0, occurrences = 0;
    Py_ssize_t index = cols->n_events;
    int written = mode > WALK_SEE;  /* (the events' columns are: their fields passed) */
    while (r.p < r.end) {
        uint64_t tag = read_varint(&r);
        if (r.error) return 0;
        uint64_t key = TAG_KEY(tag);
        if (key == TAG(4, 2)) {
            const uint8_t *stat_end = value_end(&r);
            if (mode == WALK_EVENTS && stat_end) {  /* (the stats: passed over) */
                r.p = stat_end;
                continue;
            }
            if (!stat_end || !decode_stat(&r, r.p, stat_end, cols, (int32_t)index, mode))
                return 0;
            r.p = stat_end;
            continue;
        }
        if (written && (tag & 7) == 0) {
            skip_varint(&r);
            if (r.error) return 0;
            continue;
        }
        if (key == TAG(1, 0)) meta = (int64_t)read_varint(&r);
        else if (key == TAG(2, 0)) { offset = (int64_t)read_varint(&r); occurrences = 0; }
        else if (key == TAG(3, 0)) duration = (int64_t)read_varint(&r);
        else if (key == TAG(5, 0)) { occurrences = (int64_t)read_varint(&r); offset = 0; }
        else if (!skip_value(&r, (unsigned)(tag & 7))) return 0;
        if (r.error) return 0;
    }
    if (written) {
        cols->n_events++;
        return 1;
    }
    if (!col_reserve(&cols->meta, index + 1) || !col_reserve(&cols->offset, index + 1) ||
        !col_reserve(&cols->duration, index + 1)) {
        cols->no_memory = 1;
        return 0;
    }
    if (occurrences && !cols->has_occurrences) { /* the first aggregate: zeros before it */
        if (!col_reserve(&cols->occurrences, cols->meta.cap)) {
            cols->no_memory = 1;
            return 0;
        }
        memset(cols->occurrences.data, 0, (size_t)index * 8);
        cols->has_occurrences = 1;
    }
    if (!put_id(&cols->meta, (size_t)index, meta)) {
        cols->no_memory = 1;
        return 0;
    }
    ((int64_t *)cols->offset.data)[index] = offset;
    ((int64_t *)cols->duration.data)[index] = duration;
    if (cols->has_occurrences) {
        if (!col_reserve(&cols->occurrences, index + 1)) {
            cols->no_memory = 1;
            return 0;
        }
        ((int64_t *)cols->occurrences.data)[index] = occurrences;
    }
    cols->n_events++;
    return 1;
}

/* One pass over the XLine message: its header and every event into `cols` (whose event
 * columns start with room for one event per 16 bytes of the line, grown when that is short;
 * only the entries written are ever touched). `mode` is the pass (cols->mode), handed down
 * to the event and stat decoders inlined here. (Inlining the walk once per pass, `mode` a
 * constant in each, made decode_line_dense over an 8-GPU capture's lines slower, not faster:
 * 0.40 -> 0.65 s CPU.) */
static int walk_line(
    const uint8_t *buf, Py_ssize_t size, Columns *cols, Header *h, int mode) {
    Reader r = {buf, buf + size, buf, 0};
    size_t guess = mode > WALK_SEE ? 0 : (size_t)size / 16 + 1;
    if (!col_reserve(&cols->meta, guess) || !col_reserve(&cols->offset, guess) ||
        !col_reserve(&cols->duration, guess)) {
        cols->no_memory = 1;
        return 0;
    }
    while (r.p < r.end) {
        uint64_t tag = read_varint(&r);
        if (r.error) return 0;
        uint64_t key = TAG_KEY(tag);
        if (key == TAG(4, 2)) {
            const uint8_t *event_end = value_end(&r);
            if (!event_end || !decode_event(&r, r.p, event_end, cols, mode)) return 0;
            r.p = event_end;
            continue;
        }
        switch (key) {
        case TAG(1, 0): h->id = (int64_t)read_varint(&r); break;
        case TAG(3, 0): h->timestamp_ns = (int64_t)read_varint(&r); break;
        case TAG(9, 0): h->duration_ps = (int64_t)read_varint(&r); break;
        case TAG(10, 0): h->display_id = (int64_t)read_varint(&r); break;
        case TAG(2, 2): case TAG(11, 2): {
            const uint8_t *text_end = value_end(&r);
            if (!text_end) return 0;
            Py_ssize_t n = (Py_ssize_t)(text_end - r.p);
            if (key == TAG(2, 2)) { h->name = r.p; h->name_len = n; }
            else { h->display_name = r.p; h->display_name_len = n; }
            r.p = text_end;
            break;
        }
        default:
            if (!skip_value(&r, (unsigned)(tag & 7))) return 0;
        }
        if (r.error) return 0;
    }
    return 1;
}

int wire_walk_line(const uint8_t *buf, Py_ssize_t size, Columns *cols, Header *h) {
    return walk_line(buf, size, cols, h, cols->mode);
}

void wire_free_columns(Columns *cols) {
    Col *all[] = {&cols->meta, &cols->offset, &cols->duration, &cols->occurrences,
                  &cols->st_event, &cols->st_length, &cols->st_meta, &cols->st_value,
                  &cols->st_kind};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        free(all[k]->data);
        all[k]->data = NULL;
    }
}

/* Pass one's view of a stat row (dense_pass_of's loop, a row at a time). */
static int line_see(LinePlan *p, int32_t r, int64_t id, uint8_t kind, int64_t v,
                    int32_t length) {
    DensePlan *d = &p->d;
    if ((uint64_t)id >= DENSE_ID_SLOTS) { p->bail = 1; return 0; }  /* (negative ids too) */
    int s = p->slot[id];
    if (s == DENSE_NO_STAT) {
        if (d->k == DENSE_MAX_STATS) { p->bail = 1; return 0; }
        s = d->k++;
        p->slot[id] = (uint8_t)s;
        d->st[s].first_seen = p->rows;
        d->stat_ids[s] = id;
        p->kind0[s] = kind;
        p->mixed |= (uint64_t)(kind == 0) << s;  /* NONE: never dense */
        p->count[s] = 0;
        p->vmin[s] = INT64_MAX;
        p->vmax[s] = INT64_MIN;
    }
    p->mixed |= (uint64_t)(kind != p->kind0[s]) << s;
    if (v < p->vmin[s]) p->vmin[s] = v;
    if (v > p->vmax[s]) p->vmax[s] = v;
    p->count[s]++;
    p->first_pairs[r == p->previous_row ? p->previous * DENSE_MAX_STATS + s
                                        : DENSE_MAX_STATS * DENSE_MAX_STATS] = 1;
    p->previous_row = r;
    p->previous = s;
    if (length > p->longest) p->longest = length;
    p->rows++;
    return 1;
}

/* An integer hash-coded stat with so many distinct values already (two or more) that it
 * stays sparse whatever the rest of its rows hold (a host thread's per-event ids: 120k
 * distinct of 120k rows), so that hashing the rest and sorting its table are not done. */
static int line_hopeless(const LinePlan *p, const DenseStat *t) {
    int64_t distinct = (int64_t)t->hash.n_entries;
    return distinct >= 2 && line_not_worth(p, t->count, distinct + 1);
}

/* Stops coding stat `s`: it stays sparse (no table: `line_decide` keeps its rows, which
 * pass two writes already: a stat that may stay sparse is `line_may_keep`'s). */
static void line_give_up(LinePlan *p, int s) {
    DenseStat *t = &p->d.st[s];
    free(t->tmp);
    t->tmp = NULL;
    wire_hash_free(&t->hash);
    memset(&t->hash, 0, sizeof t->hash);
    t->method = CODE_NONE;
    p->lanes.slow[s] = 0;
    p->lanes.idle[s] = 1;
}

/* Pass two's coding of a stat row (dense_second_pass's loop body). */
static int line_code(Columns *cols, LinePlan *p, int32_t r, int64_t id, int64_t v,
                     int32_t length) {
    DenseLanes *lanes = &p->lanes;
    int s = p->slot[id];  /* (every id below DENSE_ID_SLOTS: pass one saw to it) */
    if (lanes->idle[s]) return 1;
    if (lanes->slow[s]) {
        DenseStat *t = &p->d.st[s];
        int done = wire_dense_slow_row(&p->d, t, r, v, length);
        if (done < 0) p->bail = 1;
        if (done == 0) cols->no_memory = 1;
        if (done == 1 && t->method == CODE_HASH && line_hopeless(p, t)) line_give_up(p, s);
        return done == 1;
    }
    uint64_t offset = (uint64_t)v - (uint64_t)lanes->base[s];
    uint32_t code = (uint32_t)(offset + 1);
    memcpy(lanes->out[s] + ((size_t)r << lanes->shift[s]), &code, 4);
    lanes->present[s][offset] = 1;
    return 1;
}

/* A row that stays (or may stay) sparse, written (room for every such row was made first). */
static int line_put(LinePlan *p, int32_t r, int64_t id, uint8_t kind, int64_t v,
                    int32_t length) {
    Py_ssize_t k = p->n_kept++;
    ((int32_t *)p->k_row.data)[k] = r;
    ((int32_t *)p->k_meta.data)[k] = (int32_t)id;
    ((uint8_t *)p->k_kind.data)[k] = kind;
    ((int64_t *)p->k_value.data)[k] = v;
    if (p->k_length.item == 1) ((uint8_t *)p->k_length.data)[k] = (uint8_t)length;
    else if (p->k_length.item == 2) ((uint16_t *)p->k_length.data)[k] = (uint16_t)length;
    else ((int32_t *)p->k_length.data)[k] = length;
    return 1;
}

static inline int line_row(Columns *cols, int mode, int32_t event_index, int64_t meta,
                           uint8_t kind, int64_t value, int32_t length) {
    LinePlan *p = cols->line;
    if (mode == WALK_SEE) return line_see(p, event_index, meta, kind, value, length);
    if (mode == WALK_CODE) {
        if (!line_code(cols, p, event_index, meta, value, length)) return 0;
        return p->write[p->slot[meta]] ? line_put(p, event_index, meta, kind, value, length)
                                       : 1;
    }
    return p->keep[p->slot[meta]] ? line_put(p, event_index, meta, kind, value, length) : 1;
}
