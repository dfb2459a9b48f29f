/* One stat's distinct values for the dense plan (_wire_dense_plan.c, _wire_line_dense.c):
 * the hash table that numbers them in the order first seen (integers by value, str/bytes
 * by their bytes), a hash-coded row's code, and the orders numpy's unique sorts them in.
 * Runs without the GIL. */
#include "_wire.h"

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The bytes of a string of at most 8 as numpy's key: zero-padded, read as a native uint64
 * (one 8-byte load and a mask where 8 bytes are left in the blob). */
static inline int64_t short_key(const uint8_t *p, int32_t length, int64_t left) {
    uint64_t key = 0;
    if (left >= 8) {
        memcpy(&key, p, 8);
        return (int64_t)(length == 8 ? key : key & ((1ULL << (8 * length)) - 1));
    }
    memcpy(&key, p, (size_t)length);
    return (int64_t)key;
}

static uint64_t bytes_hash(const uint8_t *p, int32_t length) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)length;
    int32_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = mix64(h ^ w);
    }
    if (i < length) {
        uint64_t w = 0;
        memcpy(&w, p + i, (size_t)(length - i));
        h = mix64(h ^ w ^ 0x5bd1e995ULL);
    }
    return h;
}

void wire_hash_free(DenseHash *t) {
    free(t->entries);
    free(t->buckets);
}

/* Room for one more entry at most half the buckets full; 0 when memory ran out. */
static int hash_grow(DenseHash *t) {
    if (t->n_entries < t->cap_entries && 2 * (t->n_entries + 1) <= t->n_buckets) return 1;
    if (t->n_entries == t->cap_entries) {
        size_t cap = t->cap_entries ? 2 * t->cap_entries : 64;
        DenseEntry *grown = realloc(t->entries, cap * sizeof *grown);
        if (!grown) return 0;
        t->entries = grown;
        t->cap_entries = cap;
    }
    if (2 * (t->n_entries + 1) > t->n_buckets) {
        size_t n = t->n_buckets ? 2 * t->n_buckets : 128;
        int32_t *b = malloc(n * sizeof *b);
        if (!b) return 0;
        memset(b, 0xFF, n * sizeof *b);
        for (size_t e = 0; e < t->n_entries; e++) {
            size_t at = (size_t)t->entries[e].hash & (n - 1);
            while (b[at] >= 0) at = (at + 1) & (n - 1);
            b[at] = (int32_t)e;
        }
        free(t->buckets);
        t->buckets = b;
        t->n_buckets = n;
    }
    return 1;
}

/* A new entry for a value not in the table; -1 when memory ran out. */
static int32_t hash_add(DenseHash *t, DenseEntry entry) {
    if (!hash_grow(t)) return -1;
    size_t mask = t->n_buckets - 1, at = (size_t)entry.hash & mask;
    while (t->buckets[at] >= 0) at = (at + 1) & mask;
    int32_t e = (int32_t)t->n_entries++;
    entry.code = e;
    t->entries[e] = entry;
    t->buckets[at] = e;
    return e;
}

/* The provisional code of an integer value (a new one at first sight); -1: out of memory. */
static int32_t hash_int_code(DenseHash *t, int64_t value) {
    if (t->has_last && t->last_value == value) return t->last_code;
    uint64_t h = mix64((uint64_t)value);
    int32_t e = -1;
    if (t->n_entries && value <= t->max_value) {  /* (increasing ids: new, no probe) */
        size_t mask = t->n_buckets - 1, at = (size_t)h & mask;
        while ((e = t->buckets[at]) >= 0 && t->entries[e].value != value) at = (at + 1) & mask;
    }
    if (e < 0) {
        if ((e = hash_add(t, (DenseEntry){value, 0, 0, 0, h})) < 0) return -1;
        if (e == 0 || value > t->max_value) t->max_value = value;
    }
    t->has_last = 1;
    t->last_value = value;
    t->last_code = e;
    return e;
}

/* The provisional code of the string strings[offset : offset + length], told apart by its
 * bytes; -1 when out of memory. */
static int32_t hash_string_code(DenseHash *t, const uint8_t *strings, int64_t n_strings,
                                int64_t offset, int32_t length) {
    const uint8_t *p = strings + offset;
    int64_t key = length <= 8 ? short_key(p, length, n_strings - offset) : 0;
    if (length <= 8 && t->has_last && t->last_value == key && t->last_length == length)
        return t->last_code;
    uint64_t h = length <= 8 ? mix64((uint64_t)key ^ ((uint64_t)length << 59))
                             : bytes_hash(p, length);
    int32_t e = -1;
    if (t->n_buckets) {
        size_t mask = t->n_buckets - 1, at = (size_t)h & mask;
        while ((e = t->buckets[at]) >= 0) {
            DenseEntry *d = &t->entries[e];
            if (d->hash == h && d->length == length &&
                (length <= 8 ? d->key == key
                             : memcmp(strings + d->value, p, (size_t)length) == 0))
                break;
            at = (at + 1) & mask;
        }
    }
    if (e < 0 && (e = hash_add(t, (DenseEntry){offset, key, length, 0, h})) < 0) return -1;
    if (length <= 8) {
        t->has_last = 1;
        t->last_value = key;
        t->last_length = length;
        t->last_code = e;
    }
    return e;
}

int wire_cmp_int_entry(const void *a, const void *b) {
    int64_t x = ((const DenseEntry *)a)->value, y = ((const DenseEntry *)b)->value;
    return (x > y) - (x < y);
}

/* numpy's order of one stat's distinct strings: by length, then (at most 8 bytes) by the
 * zero-padded bytes read as a uint64, else by the bytes (a void record's order). Entries of
 * strings longer than 8 hold their start address in `key` while sorted. */
int wire_cmp_string_entry(const void *a, const void *b) {
    const DenseEntry *x = a, *y = b;
    if (x->length != y->length) return x->length < y->length ? -1 : 1;
    if (x->length <= 8) {
        uint64_t u = (uint64_t)x->key, v = (uint64_t)y->key;
        return (u > v) - (u < v);
    }
    return memcmp((const uint8_t *)(intptr_t)x->key, (const uint8_t *)(intptr_t)y->key,
                  (size_t)x->length);
}

/* A hash-coded row: its value's code (a string's: by its bytes) at its event. 1 done, 0 out
 * of memory, -1 a string not handled here (told apart by offset in numpy). */
int wire_dense_slow_row(DensePlan *d, DenseStat *t, int32_t r, int64_t v, int64_t length) {
    int32_t code;
    if (t->method == CODE_HASH) {
        code = hash_int_code(&t->hash, v);
    } else {
        t->string_bytes += length;
        if (length > DENSE_LONG_STRING || v < 0 || length < 0 || v > d->n_strings - length ||
            t->string_bytes > DENSE_MAX_STRING_BYTES)
            return -1;
        code = hash_string_code(&t->hash, d->strings, d->n_strings, v, (int32_t)length);
    }
    if (code < 0) return 0;
    t->tmp[r] = code;
    return 1;
}
