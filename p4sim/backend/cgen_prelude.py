"""The C runtime text every generated program starts with: integer helpers, the packet
buffer, the switch state struct and table lookup. Plain C (``{{``/``}}`` only where a
string is later formatted), kept apart from the generator that emits around it.
"""
from __future__ import annotations



_PRELUDE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef __int128 i128;
typedef unsigned __int128 u128;

#define P4_DROP 0
#define P4_UNICAST 1
#define P4_MULTICAST 2
#define P4_ERROR (-3)                    /* a DataplaneError: see p4_error() */

/* p4_switch_t.exit_flag: what unwinds the generated functions (0: nothing) */
#define P4_EXITING 1                     /* `exit`: up to the block's handler */
#define P4_RAISED 2                      /* a DataplaneError: up to the pipeline */
#define P4_REJECT 3                      /* a parser reject: up to the pipeline */

typedef struct p4_pktin_t { const uint8_t *buf; int64_t len; int64_t off; } p4_pktin_t;
typedef struct p4_pktout_t { uint8_t *buf; int64_t len; } p4_pktout_t;

static inline i128 p4_shl(i128 a, i128 b) { return (b < 0 || b >= 128) ? 0 : (i128)((u128)a << (int)b); }
static inline i128 p4_shr(i128 a, i128 b) { return (b < 0 || b >= 127) ? (a < 0 ? -1 : 0) : a >> (int)b; }
static inline i128 p4_pydiv(i128 a, i128 b) { i128 q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) q--; return q; }
static inline i128 p4_pymod(i128 a, i128 b) { i128 r = a % b; if (r != 0 && ((r < 0) != (b < 0))) r += b; return r; }
static inline i128 p4_sext(i128 v, int w) { i128 half = (i128)1 << (w - 1); return ((v & (((i128)1 << w) - 1)) ^ half) - half; }

/* Bits [bit, bit+w) of a big-endian byte string, MSB first (w <= 127). */
static inline i128 p4_get_bits(const uint8_t *p, int bit, int w) {
    if ((bit & 7) == 0 && (w & 7) == 0) {
        u128 v = 0;
        for (int i = 0; i < w / 8; i++) v = (v << 8) | p[bit / 8 + i];
        return (i128)v;
    }
    u128 v = 0;
    for (int i = 0; i < w; i++) {
        int b = bit + i;
        v = (v << 1) | ((p[b >> 3] >> (7 - (b & 7))) & 1);
    }
    return (i128)v;
}

static inline void p4_put_bits(uint8_t *p, int bit, int w, u128 v) {
    if ((bit & 7) == 0 && (w & 7) == 0) {
        for (int i = w / 8 - 1; i >= 0; i--) { p[bit / 8 + i] = (uint8_t)v; v >>= 8; }
        return;
    }
    for (int i = w - 1; i >= 0; i--) {
        int b = bit + i;
        if (v & 1) p[b >> 3] |= (uint8_t)(0x80 >> (b & 7));
        v >>= 1;
    }
}

static inline u128 p4_load_be(const uint8_t *p, int n) {
    u128 v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* OR v << shift into an n-byte big-endian buffer (shift counted from the last byte's LSB). */
static inline void p4_or_shifted(uint8_t *buf, int n, u128 v, int shift) {
    if (!v) return;
    int first = shift / 8, last = (shift + 128) / 8;
    if (last > n - 1) last = n - 1;
    for (int i = first; i <= last; i++) {          /* i: byte index from the LSB end */
        int rel = 8 * i - shift;
        uint8_t byte;
        if (rel >= 0) byte = rel < 128 ? (uint8_t)(v >> rel) : 0;
        else byte = -rel < 8 ? (uint8_t)(v << -rel) : 0;
        buf[n - 1 - i] |= byte;
    }
}

static inline i128 p4_reg_get128(const uint64_t *cells, int64_t i) {
    return (i128)(((u128)cells[2 * i + 1] << 64) | cells[2 * i]);
}
static inline void p4_reg_set128(uint64_t *cells, int64_t i, i128 v) {
    cells[2 * i] = (uint64_t)v; cells[2 * i + 1] = (uint64_t)((u128)v >> 64);
}

/* ---- hashes and checksums, as p4sim/runtime/hashes.py (bmv2) computes them */
static uint32_t p4_crc32_table[256];
static uint16_t p4_crc16_table[256];
static uint16_t p4_ccitt_table[256];
static void p4_hash_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i;
        for (int k = 0; k < 8; k++) r = (r & 1) ? (r >> 1) ^ 0xEDB88320u : r >> 1;
        p4_crc32_table[i] = r;
        uint16_t s = (uint16_t)i;
        for (int k = 0; k < 8; k++) s = (s & 1) ? (uint16_t)((s >> 1) ^ 0xA001) : (uint16_t)(s >> 1);
        p4_crc16_table[i] = s;
        uint16_t c = (uint16_t)(i << 8);
        for (int k = 0; k < 8; k++) c = (c & 0x8000) ? (uint16_t)((c << 1) ^ 0x1021) : (uint16_t)(c << 1);
        p4_ccitt_table[i] = c;
    }
}

static inline uint64_t p4_hash(int algo, const uint8_t *d, int64_t n) {
    switch (algo) {
    case 1: { uint32_t r = 0xFFFFFFFFu; for (int64_t i = 0; i < n; i++) r = p4_crc32_table[(r ^ d[i]) & 0xFF] ^ (r >> 8); return r ^ 0xFFFFFFFFu; }
    case 2: { uint16_t r = 0; for (int64_t i = 0; i < n; i++) r = (uint16_t)(p4_crc16_table[(r ^ d[i]) & 0xFF] ^ (r >> 8)); return r; }
    case 3: {
        uint64_t s = 0;
        for (int64_t i = 0; i + 1 < n; i += 2) s += ((uint64_t)d[i] << 8) | d[i + 1];
        if (n & 1) s += (uint64_t)d[n - 1] << 8;
        while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
        return ~s & 0xFFFF;
    }
    case 4: { uint64_t v = 0; for (int64_t i = 0; i < n && i < 8; i++) v = (v << 8) | d[i]; return v; }
    case 5: {
        uint64_t x = 0;
        for (int64_t i = 0; i < n; i += 2) x ^= ((uint64_t)d[i] << 8) | (i + 1 < n ? d[i + 1] : 0);
        return x;
    }
    case 6: { uint16_t r = 0xFFFF; for (int64_t i = 0; i < n; i++) r = (uint16_t)(p4_ccitt_table[((r >> 8) ^ d[i]) & 0xFF] ^ (r << 8)); return r; }
    }
    return 0;
}

/* ---- tna Hash: a CRC as hashes.crc_function computes it (Rocksoft parameters, width <= 64),
   XOR of big-endian words, and hashes.tna_hash_output */
typedef struct p4_crc_t {
    int width, reflected, refl_in, refl_out, shift, hi;
    uint64_t rmask, start, xorout;
    uint64_t table[256];
} p4_crc_t;

static inline u128 p4_mask(int w) { return w >= 128 ? ~(u128)0 : ((u128)1 << w) - 1; }

static inline uint64_t p4_reflect(uint64_t v, int w) {
    uint64_t r = 0;
    for (int i = 0; i < w; i++) { r = (r << 1) | (v & 1); v >>= 1; }
    return r;
}

static inline void p4_crc_init(p4_crc_t *c, int w, uint64_t poly, uint64_t init, uint64_t xorout,
                               int refl_in, int refl_out) {
    uint64_t mask = (uint64_t)p4_mask(w);
    c->width = w; c->xorout = xorout; c->refl_in = refl_in; c->refl_out = refl_out;
    c->reflected = refl_in && refl_out;
    if (c->reflected) {                  /* LSB-first register */
        uint64_t rpoly = p4_reflect(poly, w);
        for (int i = 0; i < 256; i++) {
            uint64_t r = (uint64_t)i;
            for (int k = 0; k < 8; k++) r = (r & 1) ? (r >> 1) ^ rpoly : r >> 1;
            c->table[i] = r;
        }
        c->start = p4_reflect(init & mask, w);
        return;
    }
    /* MSB-first; widths below 8 run in an 8-bit register shifted left */
    int shift = w < 8 ? 8 - w : 0, rw = w + shift;
    uint64_t rmask = (uint64_t)p4_mask(rw), top = 1ULL << (rw - 1), p = poly << shift;
    for (int i = 0; i < 256; i++) {
        uint64_t r = (uint64_t)i << (rw - 8);
        for (int k = 0; k < 8; k++) r = (r & top) ? ((r << 1) ^ p) & rmask : (r << 1) & rmask;
        c->table[i] = r;
    }
    c->start = (init & mask) << shift;
    c->shift = shift; c->hi = rw - 8; c->rmask = rmask;
}

static inline uint64_t p4_crc(const p4_crc_t *c, const uint8_t *d, int64_t n) {
    uint64_t r = c->start;
    if (c->reflected) {
        for (int64_t i = 0; i < n; i++) r = c->table[(r ^ d[i]) & 0xFF] ^ (r >> 8);
        return r ^ c->xorout;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t b = c->refl_in ? p4_reflect(d[i], 8) : d[i];
        r = c->table[((r >> c->hi) ^ b) & 0xFF] ^ ((r << 8) & c->rmask);
    }
    r >>= c->shift;
    if (c->refl_out) r = p4_reflect(r, c->width);
    return r ^ c->xorout;
}

static inline uint64_t p4_xor_words(const uint8_t *d, int64_t n, int k) {
    uint64_t x = 0;
    for (int64_t i = 0; i < n; i += k) {
        uint64_t word = 0;
        for (int j = 0; j < k; j++) word = (word << 8) | (i + j < n ? d[i + j] : 0);
        x ^= word;
    }
    return x;
}

static inline uint64_t p4_hash_output(uint64_t value, int value_width, int out_width, int msb, int extend) {
    if (out_width <= value_width)
        return msb ? value >> (value_width - out_width) : value & (uint64_t)p4_mask(out_width);
    if (!extend) return value;
    u128 out = value;
    for (int filled = value_width; filled < out_width; filled += value_width)
        out = (out << value_width) | value;
    return (uint64_t)(out & p4_mask(out_width));
}

static inline i128 p4_v1hash(int algo, const uint8_t *d, int64_t n, i128 base, i128 max, int width) {
    i128 h = (i128)p4_hash(algo, d, n);
    if (max) h = p4_pymod(h, max);
    return (base + h) & (((i128)1 << width) - 1);
}
"""

_SWITCH_STRUCT = r"""
typedef struct p4_table_t p4_table_t;
struct p4_table_t {
    int64_t nkeys, nargs, mode;          /* mode 0: hash groups (exact, lpm); 1: ordered scan */
    int64_t default_action;
    uint64_t *default_args;
    int64_t nentries, stride;            /* entry record: group, values, masks, lo, hi, action, args */
    uint64_t *entries;
    int64_t ngroups;
    uint64_t *group_masks;               /* ngroups * nkeys */
    int64_t *group_cap;                  /* per group: power-of-two slot count */
    int64_t **group_slots;               /* per group: entry index + 1, 0 = empty */
};

typedef struct p4_switch_t {
    void *regs[P4_NREGS];
    p4_table_t tables[P4_NTABLES];
    void *state;                         /* p4_state_t: the packet between ingress and egress */
    void *cur_sm;                        /* standard_metadata of the running block */
    int64_t packet_length;
    const uint8_t *payload;
    int64_t payload_len;
    int exit_flag, rejected;             /* exit_flag: P4_EXITING, P4_RAISED, P4_REJECT or 0 */
    int64_t reject_code;
    const char *error;                   /* the DataplaneError's message */
    int64_t truncate_length;             /* v1model truncate() in this egress pass, 0: none */
    uint8_t claimed[P4_NREGS];           /* tna: registers executed in this pass */
    int resubmit_set, clone_set;         /* tna: Resubmit.emit / Mirror.emit in this pass */
    uint64_t clone_session;
    int64_t resubmit_len, mirror_len;
    uint8_t resubmit_data[P4_RESUBMIT_BYTES], mirror_data[P4_MIRROR_BYTES];
    uint8_t *scratch[3];                 /* tna: packets with their prefixes, grown on demand */
    int64_t scratch_cap[3];
} p4_switch_t;

const char *p4_error(p4_switch_t *sw) { return sw->error ? sw->error : ""; }

/* The resubmit (which 0) or mirror (1) field list of the last ingress pass. */
const uint8_t *p4_pass_data(p4_switch_t *sw, int64_t which) {
    return which ? sw->mirror_data : sw->resubmit_data;
}

static inline uint8_t *p4_scratch(p4_switch_t *sw, int i, int64_t need) {
    if (need > sw->scratch_cap[i]) {
        int64_t cap = need < 4096 ? 4096 : 2 * need;
        uint8_t *p = realloc(sw->scratch[i], (size_t)cap);
        if (!p) return 0;
        sw->scratch[i] = p;
        sw->scratch_cap[i] = cap;
    }
    return sw->scratch[i];
}

static inline int64_t p4_table_lookup(p4_table_t *t, const uint64_t *key, const uint64_t **args, int64_t *entry);

static inline uint64_t p4_checksum(p4_switch_t *sw, int algo, const uint8_t *d, int64_t n, int with_payload, int width) {
    uint64_t h;
    if (with_payload) {
        uint8_t *all = malloc((size_t)(n + sw->payload_len) + 1);
        if (!all) return 0;
        memcpy(all, d, (size_t)n);
        memcpy(all + n, sw->payload, (size_t)sw->payload_len);
        h = p4_hash(algo, all, n + sw->payload_len);
        free(all);
    } else {
        h = p4_hash(algo, d, n);
    }
    return width >= 64 ? h : h & ((1ULL << width) - 1);
}
"""

_TABLES_C = r"""
/* ---- tables: a snapshot of the Python Table, loaded whenever the control plane changed it */
static inline uint64_t p4_mix(const uint64_t *k, const uint64_t *m, int64_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n; i++) {
        h ^= (k[i] & m[i]) + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
        h *= 0xFF51AFD7ED558CCDULL;
        h ^= h >> 33;
    }
    return h;
}

static void p4_table_free(p4_table_t *t) {
    for (int64_t g = 0; g < t->ngroups; g++) free(t->group_slots[g]);
    free(t->group_slots); free(t->group_cap); free(t->group_masks);
    free(t->entries); free(t->default_args);
    memset(t, 0, sizeof *t);
}

/* entries: nentries records of `stride` words; group_masks: ngroups * nkeys words. */
int p4_table_load(p4_switch_t *sw, int64_t tid, int64_t mode, int64_t nkeys, int64_t nargs,
                  int64_t nentries, const uint64_t *entries, int64_t ngroups,
                  const uint64_t *group_masks, int64_t default_action,
                  const uint64_t *default_args) {
    p4_table_t *t = &sw->tables[tid];
    p4_table_free(t);
    t->nkeys = nkeys; t->nargs = nargs; t->mode = mode;
    t->stride = 2 + 4 * nkeys + nargs;
    t->nentries = nentries;
    t->default_action = default_action;
    t->default_args = calloc((size_t)(nargs + 1), 8);
    t->entries = malloc((size_t)(nentries * t->stride + 1) * 8);
    t->ngroups = ngroups;
    t->group_masks = malloc((size_t)(ngroups * nkeys + 1) * 8);
    t->group_cap = calloc((size_t)(ngroups + 1), 8);
    t->group_slots = calloc((size_t)(ngroups + 1), sizeof(int64_t *));
    if (!t->default_args || !t->entries || !t->group_masks || !t->group_cap || !t->group_slots) return -1;
    if (nargs) memcpy(t->default_args, default_args, (size_t)nargs * 8);
    if (nentries) memcpy(t->entries, entries, (size_t)(nentries * t->stride) * 8);
    if (ngroups > 0 && nkeys > 0) memcpy(t->group_masks, group_masks, (size_t)(ngroups * nkeys) * 8);
    if (mode != 0) return 0;
    int64_t *count = calloc((size_t)(ngroups + 1), 8);
    if (!count) return -1;
    for (int64_t e = 0; e < nentries; e++) count[t->entries[e * t->stride]]++;
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t cap = 8;
        while (cap < 2 * count[g]) cap <<= 1;
        t->group_cap[g] = cap;
        t->group_slots[g] = calloc((size_t)cap, 8);
        if (!t->group_slots[g]) { free(count); return -1; }
    }
    free(count);
    for (int64_t e = 0; e < nentries; e++) {
        const uint64_t *rec = t->entries + e * t->stride;
        int64_t g = (int64_t)rec[0];
        const uint64_t *masks = t->group_masks + g * nkeys;
        uint64_t mask = (uint64_t)t->group_cap[g] - 1;
        uint64_t s = p4_mix(rec + 1, masks, nkeys) & mask;
        while (t->group_slots[g][s]) s = (s + 1) & mask;
        t->group_slots[g][s] = e + 1;
    }
    return 0;
}

static inline int64_t p4_table_lookup(p4_table_t *t, const uint64_t *key, const uint64_t **args, int64_t *entry) {
    int64_t nk = t->nkeys, stride = t->stride;
    if (t->mode == 0) {
        for (int64_t g = 0; g < t->ngroups; g++) {
            const uint64_t *masks = t->group_masks + g * nk;
            uint64_t mask = (uint64_t)t->group_cap[g] - 1;
            const int64_t *slots = t->group_slots[g];
            for (uint64_t s = p4_mix(key, masks, nk) & mask; slots[s]; s = (s + 1) & mask) {
                const uint64_t *rec = t->entries + (slots[s] - 1) * stride;
                int64_t i = 0;
                while (i < nk && (key[i] & masks[i]) == rec[1 + i]) i++;
                if (i == nk) {
                    *entry = slots[s] - 1;
                    *args = rec + 2 + 4 * nk;
                    return (int64_t)rec[1 + 4 * nk];
                }
            }
        }
    } else {
        for (int64_t e = 0; e < t->nentries; e++) {
            const uint64_t *rec = t->entries + e * stride;
            int64_t i = 0;
            while (i < nk && (key[i] & rec[1 + nk + i]) == rec[1 + i]
                   && key[i] >= rec[1 + 2 * nk + i] && key[i] <= rec[1 + 3 * nk + i]) i++;
            if (i == nk) {
                *entry = e;
                *args = rec + 2 + 4 * nk;
                return (int64_t)rec[1 + 4 * nk];
            }
        }
    }
    *entry = -1;
    *args = t->default_args;
    return t->default_action;
}

p4_switch_t *p4_new(void) {
    static int hash_ready;
    if (!hash_ready) { p4_hash_init(); p4_program_init(); hash_ready = 1; }
    p4_switch_t *sw = calloc(1, sizeof *sw);
    if (!sw) return 0;
    sw->state = calloc(1, p4_state_size());
    if (!sw->state) { free(sw); return 0; }
    return sw;
}

void p4_free(p4_switch_t *sw) {
    for (int t = 0; t < P4_NTABLES; t++) p4_table_free(&sw->tables[t]);
    for (int i = 0; i < 3; i++) free(sw->scratch[i]);
    free(sw->state);
    free(sw);
}

void p4_bind_register(p4_switch_t *sw, int64_t index, void *cells) { sw->regs[index] = cells; }
"""
