/* The native host data path of hostlib (hostlib/native/__init__.py builds and loads it).
 *
 * Fast paths of the sans-IO cores hostlib.worker.Worker and hostlib.ps.ParameterServer, and the
 * UDP loops that run them with recvmmsg/sendmmsg. They own the common case only: a worker's
 * first copies, the results of its current round and fast retransmits; the PS's network
 * contributions and the results it multicasts. Everything else (queries, reminders to answer,
 * RESENDs, result copies, timeouts, frames of other rounds, overflow) is handed back to the
 * Python cores, which stay the reference: the Python wrapper syncs the state both ways around
 * every hand-off, so there is one protocol logic and these functions mirror it line by line.
 *
 * Frames are Ethernet/IPv4/UDP/INA as hostlib builds them (42 bytes of headers, then the INA
 * header and K big-endian int32 lanes); on UDP only the INA part travels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

#define PREFIX 42          /* Ethernet + IPv4 (no options) + UDP */
#define HDR 24
#define F_RESULT 0x01
#define F_COLLISION 0x02
#define F_PREEMPTED 0x04
#define F_REMINDER 0x08
#define F_RESEND 0x10
#define F_OVERFLOW 0x20
#define F_RELAY 0x40
#define F_RETRY 0x80
#define FAST_RETRANSMIT_AFTER 1   /* hostlib.worker.FAST_RETRANSMIT_AFTER: why one */
#define STALE_AFTER 1.5           /* hostlib.worker.STALE_AFTER: why 1.5 */

/* return codes of the cores and of the UDP loops */
#define OK 0
#define HANDOFF 1          /* the Python core must handle this frame */
#define NEWROUND 2         /* PS: a newer round; the Python core tracks it, then retry */
#define GAP_PY 3           /* PS: handled; the gap rule concerns an entry the Python core owns */
#define EV_DONE 10
#define EV_POLL 11
#define EV_TIMER 12
#define EV_FRAME 13
#define EV_NEWROUND 14
#define EV_GAP 15

static inline uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static inline uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static inline void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }

/* ------------------------------------------------------------------ RTO (hostlib.rto) */
typedef struct {
    double initial, minimum, maximum, max_backoff, srtt, rttvar;
    int64_t has_srtt;
} Rto;

static double rto_value(const Rto *r) {
    if (!r->has_srtt) return r->initial > r->minimum ? r->initial : r->minimum;
    double v = r->srtt + 4.0 * r->rttvar;
    if (v < r->minimum) v = r->minimum;
    return v < r->maximum ? v : r->maximum;
}

#define RETRY_MIN 1e-4      /* rto.RETRY_MIN */

/* rto.smoothed: RFC 6298's update of (srtt, rttvar) with one sample (first: no srtt yet) */
static void smoothed(int first, double *srtt, double *rttvar, double rtt) {
    if (first) { *srtt = rtt; *rttvar = rtt / 2.0; return; }
    *rttvar = 0.75 * *rttvar + 0.25 * fabs(*srtt - rtt);
    *srtt = 0.875 * *srtt + 0.125 * rtt;
}

static void rto_sample(Rto *r, double rtt) {
    smoothed(!r->has_srtt, &r->srtt, &r->rttvar, rtt);
    r->has_srtt = 1;
}

/* ------------------------------------------------------------------ encoding (Worker.push) */
/* A whole round's first copies (ina_encode_frames): values (float32 or float64) ->
 * rint(v * 2^scale) -> int32 big-endian lanes behind a copy of ``prefix`` and of sub-model s's
 * header template (fragment id patched in). Returns 0, or 1 when a value is not finite or
 * overflows int32 (unless ``clip``): the caller then lets hostlib.protocol.encode_fragments
 * raise its exact error. */
/* one fragment's lanes, the common case: every value finite and inside int32 after rounding.
 * Branch-free (the compiler vectorizes it); returns 0 if some value is not, and the caller
 * redoes the fragment exactly. Adding and subtracting 1.5 * 2^52 rounds half to even in the
 * default rounding mode, exactly for |x| < 2^51 (larger values fail the range test anyway). */
#define ENCODE_FAST(NAME, T)                                                                  \
    static int NAME(const T *v, int64_t m, double scale, uint8_t *ln) {                         \
        int32_t tmp[256];                                                                       \
        int ok = 1;                                                                             \
        for (int64_t i = 0; i < m; i++) {                                                       \
            double x = (double)v[i] * scale;                                                    \
            x = (x + 6755399441055744.0) - 6755399441055744.0;                                  \
            ok &= (x >= -2147483648.0) & (x <= 2147483647.0);                                   \
            x = x < -2147483648.0 ? -2147483648.0 : (x > 2147483647.0 ? 2147483647.0 : x);     \
            tmp[i] = (int32_t)x;                                                                \
        }                                                                                       \
        for (int64_t i = 0; i < m; i++) {                                                       \
            uint32_t y = (uint32_t)tmp[i];                                                      \
            y = (y >> 24) | ((y >> 8) & 0xff00u) | ((y << 8) & 0xff0000u) | (y << 24);          \
            memcpy(ln + 4 * i, &y, 4);                                                          \
        }                                                                                       \
        return ok;                                                                              \
    }
ENCODE_FAST(encode_fast32, float)
ENCODE_FAST(encode_fast64, double)

int ina_encode_frames(const void *values, int64_t is_f32, const int64_t *sizes, int64_t nsubs, int64_t scale_bits,
                      int64_t lanes, int64_t clip, const uint8_t *prefix, const uint8_t *templates, uint8_t *out) {
    const double scale = ldexp(1.0, (int)scale_bits);
    const int64_t flen = PREFIX + HDR + 4 * lanes;
    const float *f32 = values;
    const double *f64 = values;
    int64_t pos = 0, row = 0;
    for (int64_t s = 0; s < nsubs; s++) {
        int64_t size = sizes[s];
        for (int64_t frag = 0; frag * lanes < size; frag++, row++) {
            uint8_t *fr = out + row * flen;
            memcpy(fr, prefix, PREFIX);
            memcpy(fr + PREFIX, templates + s * HDR, HDR);
            put32(fr + PREFIX + 8, (uint32_t)frag);
            uint8_t *ln = fr + PREFIX + HDR;
            int64_t m = size - frag * lanes < lanes ? size - frag * lanes : lanes;
            int fast = m <= 256 && (is_f32 ? encode_fast32(f32 + pos, m, scale, ln)
                                           : encode_fast64(f64 + pos, m, scale, ln));
            if (!fast) {
                for (int64_t i = 0; i < m; i++) {
                    double x = nearbyint((is_f32 ? (double)f32[pos + i] : f64[pos + i]) * scale);   /* np.rint */
                    if (!(x >= -2147483648.0 && x <= 2147483647.0)) {
                        if (!clip || isnan(x)) return 1;
                        x = x < 0 ? -2147483648.0 : 2147483647.0;
                    }
                    put32(ln + 4 * i, (uint32_t)(int32_t)x);
                }
            }
            memset(ln + 4 * m, 0, 4 * (lanes - m));
            pos += m;
        }
    }
    return 0;
}

/* hostlib.protocol.is_query: the PS's query to a worker (REMINDER, node 0, not a drain), the one
 * INA frame sent without lanes */
static inline int is_query(const uint8_t *p) {
    return (p[1] & F_REMINDER) && !(p[1] & F_PREEMPTED) && be16(p + 4) == 0;
}

/* ------------------------------------------------------------------ worker */
typedef struct {
    /* the round (set by the wrapper after Worker.push) */
    int64_t n, lanes, frame_len, window, reach, recovery, nsubs, job, round, node_tries;
    const uint8_t *wire;        /* every first copy, back to back (the Worker's bytes) */
    const int32_t *sub;         /* per fragment */
    const int64_t *first, *count, *node;   /* per sub-model (node: its aggregation node) */
    const int64_t *pos;         /* gradient order (first[sub] + fragment) -> index (send order) */
    uint8_t *done, *results, *retx;  /* the Worker's own bytearrays */
    double *first_sent, *timeout, *deadline;
    uint8_t *pend;
    int32_t *later;
    double *resent_at;          /* when each fragment was last retransmitted */
    double *path_srtt, *path_rttvar;   /* per sub-model (its path): RFC 6298, srtt < 0: no sample */
    double *path_clean;         /* per sub-model: when a first copy was last answered unretransmitted */
    /* state, mirrored from/to the Worker around hand-offs */
    int64_t base, next, n_done, n_pending, n_recovering;   /* recovering: pending and retransmitted */
    double newest_answered;
    Rto rto, resend_rtt, retry_rtt;   /* Worker.rto, .resend_rtt, .retry_rtt */
    int64_t sent, resent, fast_resent, results_n, duplicate_results;
    /* output: frame pointers (into wire or scratch) */
    int64_t out_n, out_cap, scratch_used;
    const uint8_t **out;
    uint8_t *scratch;
} Worker;

static inline void w_emit(Worker *w, const uint8_t *frame) { w->out[w->out_n++] = frame; }

static void w_resend(Worker *w, int64_t idx) {
    /* Worker._resend of a first retransmission: the first copy flagged RETRY, to its node, if
     * it has one and node_tries allows; else with node 0 and RESEND (count 1 and the own bitmap
     * bit are already the first copy's) */
    uint8_t *fr = w->scratch + w->scratch_used * w->frame_len;
    w->scratch_used++;
    memcpy(fr, w->wire + idx * w->frame_len, w->frame_len);
    if (w->node_tries >= w->retx[idx] && be16(fr + PREFIX + 4) != 0) {
        fr[PREFIX + 1] = F_RETRY;
    } else {
        fr[PREFIX + 1] = F_RESEND;
        put16(fr + PREFIX + 4, 0);
    }
    w_emit(w, fr);
}

/* Worker._path_sample: RFC 6298's update of sub-model p's round trip */
static void w_path_sample(Worker *w, int32_t p, double rtt) {
    smoothed(w->path_srtt[p] < 0, &w->path_srtt[p], &w->path_rttvar[p], rtt);
}

/* Worker._rack: fragment e's timer brought forward to its RACK deadline */
static void w_rack(Worker *w, int64_t e) {
    int32_t p = w->sub[e];
    if (w->path_srtt[p] < 0) return;
    double rack = 2.0 * w->path_srtt[p] + 4.0 * w->path_rttvar[p];
    double rto = rto_value(&w->rto);
    if (rack > rto) rack = rto;
    if (rack < RETRY_MIN) rack = RETRY_MIN;
    if (w->first_sent[e] + rack < w->deadline[e]) w->deadline[e] = w->first_sent[e] + rack;
}

/* Worker._presume_stale: first copies that waited STALE_AFTER path srtts, oldest first, within
 * the recovery bound, presumed lost (their slots freed, their timers kept); how many */
static int64_t w_presume_stale(Worker *w, double now) {
    int64_t freed = 0;
    for (int64_t e = w->base; e < w->next && w->n_recovering < w->recovery; e++) {
        double srtt = w->path_srtt[w->sub[e]];
        if (w->pend[e] && !w->retx[e] && w->later[e] >= 0 && srtt >= 0
            && STALE_AFTER * srtt < now - w->first_sent[e]) {
            w->later[e] = -1;
            w->n_recovering++;
            freed++;
        }
    }
    return freed;
}

/* Worker._fill */
void ina_worker_fill(Worker *w, double now) {
    /* first copies in flight, and the retransmitted ones beyond the recovery bound */
    int64_t beside = w->n_recovering < w->recovery ? w->n_recovering : w->recovery;
    int64_t room = w->window - (w->n_pending - beside);
    if (room <= 0 && w->n_recovering < w->recovery) room += w_presume_stale(w, now);
    int64_t stop = w->base + w->reach < w->n ? w->base + w->reach : w->n;
    if (room <= 0 || w->next >= stop) return;
    double t = rto_value(&w->rto);
    int64_t i = w->next, k = 0;
    for (; i < stop && k < room; i++) {
        if (w->done[i]) continue;       /* its result came before we sent it */
        w->pend[i] = 1;
        w->deadline[i] = now + t;
        w->first_sent[i] = now;
        w->timeout[i] = t;
        w->n_pending++;
        w->sent++;
        k++;
        w_emit(w, w->wire + i * w->frame_len);
    }
    w->next = i;
    if (k && i >= w->n && w->n_done)    /* the round's last first copy: Worker._arm_tail */
        for (int64_t e = w->base; e < w->n; e++)
            if (w->pend[e] && !w->retx[e]) w_rack(w, e);
}

/* Worker.on_frame for a payload (INA header + lanes, at least 24 + 4K bytes): OK if handled
 * here, HANDOFF for anything but a new, non-overflowed RESULT of the current round. */
int ina_worker_payload(Worker *w, const uint8_t *p, double now) {
    int flags = p[1];
    if (!(flags & F_RESULT) || (flags & F_OVERFLOW)) return HANDOFF;
    if (be16(p + 2) != w->job || be32(p + 20) != (uint32_t)w->round) return HANDOFF;
    int64_t sub = be16(p + 6), frag = be32(p + 8);
    if (sub >= w->nsubs || frag >= w->count[sub]) return HANDOFF;
    int64_t idx = w->pos[w->first[sub] + frag];
    if (w->done[idx]) { w->duplicate_results++; return OK; }
    int64_t size = 4 * w->lanes;
    memcpy(w->results + idx * size, p + HDR, size);
    w->done[idx] = 1;
    w->n_done++;
    w->results_n++;
    /* node_id 0, RELAY (a node multicast it for the PS) or RETRY (a node's kept result answering
     * a retry): answers no first copy */
    int from_switch = be16(p + 4) != 0 && !(flags & (F_RELAY | F_RETRY));
    if (w->pend[idx]) {
        w->pend[idx] = 0;
        w->n_pending--;
        if (!w->retx[idx]) {                                             /* Karn */
            double rtt = now - w->first_sent[idx];
            rto_sample(&w->rto, rtt);
            w_path_sample(w, w->sub[idx], rtt);
            w->path_clean[w->sub[idx]] = now;
            if (w->later[idx] < 0) w->n_recovering--;     /* presumed lost, yet answered */
        } else {
            w->n_recovering--;
            /* a switch's result answers the first copy: an exact path sample, taken when no first
             * copy of the sub-model was answered unretransmitted since (Worker._on_result) */
            if (from_switch && w->path_clean[w->sub[idx]] < w->first_sent[idx])
                w_path_sample(w, w->sub[idx], now - w->first_sent[idx]);
            if (w->retx[idx] == 1) rto_sample(&w->resend_rtt, now - w->resent_at[idx]);   /* one try */
            else if (w->retx[idx] == 2) rto_sample(&w->retry_rtt, now - w->resent_at[idx]);
        }
    }
    if (w->first_sent[idx] > w->newest_answered) w->newest_answered = w->first_sent[idx];
    int32_t s = w->sub[idx];
    /* Worker.retry_wait and the RACK window */
    double retry = w->resend_rtt.has_srtt ? rto_value(&w->resend_rtt) : w->rto.minimum;
    {   /* Worker.retry_wait: at least the fastest path's srtt, at most the maximum */
        double fastest = INFINITY;
        for (int64_t q = 0; q < w->nsubs; q++)
            if (w->path_srtt[q] >= 0 && w->path_srtt[q] < fastest) fastest = w->path_srtt[q];
        if (isinf(fastest)) fastest = 0.0;
        if (fastest > retry) retry = fastest;
        if (retry > w->rto.maximum) retry = w->rto.maximum;
    }
    for (int64_t e = w->base; e < idx; e++) {
        if (!w->pend[e] || w->retx[e]) continue;
        /* a switch's result speaks for its node's sub-models, the PS's for its own sub-model;
         * only a switch's result of the same sub-model fast-retransmits */
        int same = from_switch ? w->node[w->sub[e]] == w->node[s] : w->sub[e] == s;
        if (same && (!from_switch || w->sub[e] != s)) {
            /* a later result from the PS, or another sub-model's from the same node: presumed lost,
             * resent at its RACK deadline
             * (Worker._on_result) */
            if (w->later[e] >= 0) { w->later[e] = -1; w->n_recovering++; }
            w_rack(w, e);
        } else if (same) {
            /* fast retransmit: later results of the same sub-model overtook a pending fragment */
            int presumed = w->later[e] < 0;
            w->later[e] = (presumed ? 0 : w->later[e]) + 1;
            if (w->later[e] >= FAST_RETRANSMIT_AFTER) {
                w->retx[e] = 1;
                if (!presumed) w->n_recovering++;
                w->timeout[e] = retry;
                w->deadline[e] = now + retry;
                w->resent_at[e] = now;
                w->resent++;
                w->fast_resent++;
                w_resend(w, e);
            }
        } else {
            /* another path's later result: presumed lost once it waited its path's srtt */
            double srtt = w->path_srtt[w->sub[e]];
            if (w->later[e] >= 0 && srtt >= 0 && srtt < now - w->first_sent[e]) {
                w->later[e] = -1;
                w->n_recovering++;
            }
            w_rack(w, e);
        }
    }
    while (w->base < w->n && w->done[w->base]) w->base++;
    ina_worker_fill(w, now);
    return OK;
}

/* a whole frame (sans-IO): hostlib's option-less layout, else HANDOFF */
static int fast_layout(const uint8_t *f, int64_t len, int64_t lanes) {
    return len >= PREFIX + HDR + 4 * lanes && f[12] == 8 && f[13] == 0 && f[14] == 0x45 && f[23] == 17
           && be16(f + 36) == 47100 && (f[PREFIX] >> 4) == 2;
}

int ina_worker_frame(Worker *w, const uint8_t *f, int64_t len, double now) {
    if (!fast_layout(f, len, w->lanes)) return HANDOFF;
    return ina_worker_payload(w, f + PREFIX, now);
}

double ina_worker_next_deadline(const Worker *w) {
    double d = INFINITY;
    if (!w->n_pending) return d;
    for (int64_t i = w->base; i < w->next; i++)
        if (w->pend[i] && w->deadline[i] < d) d = w->deadline[i];
    return d;
}

/* ------------------------------------------------------------------ PS */
enum { K_PLAIN, K_PARTIAL, K_COLLISION, K_PREEMPTED, K_DRAINED, K_SWITCH_RESULT, K_REMINDER, K_NO_CONTRIBUTION,
       K_STALE, K_LATE, K_OVERLAP, NKINDS };
enum { E_OPEN = 1, E_DONE = 2, E_PY = 3 };

typedef struct Entry {
    uint64_t key;                   /* sub << 32 | fragment */
    int64_t seq;                    /* creation order across C and Python entries */
    double created, deadline, timeout, completed;    /* completed: when its result went out, -1 before */
    uint32_t bitmap;
    uint8_t state, overflow;
    struct Entry *prev, *nxt;       /* the open list, in creation order */
    int64_t acc[];
} Entry;

typedef struct {
    uint64_t key;
    Entry *e;
} Slot;

#define CHUNK 1024                  /* entries allocated together: a round's entries lie in order */

typedef struct {
    int64_t job, round, cap, count;
    Slot *slots;                    /* open addressing; the key inline, so a probe is one load */
    uint8_t **chunks;
    int64_t nchunks, chunks_cap, used;      /* used: entries taken from the last chunk */
} Table;

typedef struct {
    int64_t id, nworkers, python_only, has_newest, newest;
    uint32_t mask;
    int32_t wid[32];
    uint8_t prefix[32][PREFIX];     /* PS -> worker addressing, as hostlib builds it */
    int64_t relay_node;             /* JobConfig.result_via (0: none): results go once, through it */
    uint8_t relay_prefix[PREFIX];   /* PS -> that node's reminder host */
} Job;

typedef struct {
    int64_t lanes, frame_len, njobs, ntables, tables_cap, seq;
    Job *jobs;
    Table *tables;
    Entry open;                     /* sentinel */
    Rto rto;
    int64_t counts[NKINDS];
    int64_t completed, results_sent, results_relayed;
    int64_t out_n, out_cap;
    const uint8_t **out;
    uint8_t *scratch;
} Ps;

void ina_ps_free(Ps *ps);

Ps *ina_ps_new(int64_t lanes, int64_t njobs, int64_t out_cap) {
    Ps *ps = calloc(1, sizeof(Ps));
    if (!ps) return NULL;
    ps->lanes = lanes;
    ps->frame_len = PREFIX + HDR + 4 * lanes;
    ps->njobs = njobs;
    ps->jobs = calloc(njobs ? njobs : 1, sizeof(Job));
    ps->out_cap = out_cap;
    ps->out = calloc(out_cap, sizeof(uint8_t *));
    ps->scratch = malloc(out_cap * ps->frame_len);
    ps->open.prev = ps->open.nxt = &ps->open;
    if (!ps->jobs || !ps->out || !ps->scratch) { ina_ps_free(ps); return NULL; }
    return ps;
}

Job *ina_ps_job(Ps *ps, int64_t i) { return &ps->jobs[i]; }

static void table_free(Ps *ps, Table *t) {
    for (int64_t i = 0; i < t->cap; i++) {
        Entry *e = t->slots[i].e;
        if (e && e->state == E_OPEN) { e->prev->nxt = e->nxt; e->nxt->prev = e->prev; }
    }
    for (int64_t i = 0; i < t->nchunks; i++) free(t->chunks[i]);
    free(t->chunks);
    free(t->slots);
    (void)ps;
}

static Entry *table_alloc(Ps *ps, Table *t) {
    size_t size = sizeof(Entry) + ps->lanes * sizeof(int64_t);
    if (!t->nchunks || t->used == CHUNK) {
        if (t->nchunks == t->chunks_cap) {
            int64_t cap = t->chunks_cap ? 2 * t->chunks_cap : 16;
            uint8_t **c = realloc(t->chunks, cap * sizeof(uint8_t *));
            if (!c) return NULL;
            t->chunks = c;
            t->chunks_cap = cap;
        }
        uint8_t *chunk = malloc(CHUNK * size);
        if (!chunk) return NULL;
        t->chunks[t->nchunks++] = chunk;
        t->used = 0;
    }
    Entry *e = (Entry *)(t->chunks[t->nchunks - 1] + t->used++ * size);
    memset(e, 0, size);
    return e;
}

void ina_ps_free(Ps *ps) {
    if (!ps) return;
    for (int64_t i = 0; i < ps->ntables; i++) table_free(ps, &ps->tables[i]);
    free(ps->tables);
    free(ps->jobs);
    free(ps->out);
    free(ps->scratch);
    free(ps);
}

static Job *find_job(Ps *ps, int64_t id) {
    for (int64_t i = 0; i < ps->njobs; i++)
        if (ps->jobs[i].id == id) return &ps->jobs[i];
    return NULL;
}

static Table *find_table(Ps *ps, int64_t job, int64_t round, int create) {
    for (int64_t i = 0; i < ps->ntables; i++)
        if (ps->tables[i].job == job && ps->tables[i].round == round) return &ps->tables[i];
    if (!create) return NULL;
    if (ps->ntables == ps->tables_cap) {
        int64_t cap = ps->tables_cap ? 2 * ps->tables_cap : 8;
        Table *t = realloc(ps->tables, cap * sizeof(Table));
        if (!t) return NULL;
        ps->tables = t;
        ps->tables_cap = cap;
    }
    Table *t = &ps->tables[ps->ntables];
    memset(t, 0, sizeof(*t));
    t->job = job; t->round = round; t->cap = 1024;
    t->slots = calloc(t->cap, sizeof(Slot));
    if (!t->slots) return NULL;
    ps->ntables++;
    return t;
}

/* where a key's probe starts: consecutive fragments of a sub-model in consecutive slots (a
 * round's keys arrive nearly in order, so probes stay in cache), sub-models spread apart */
static inline uint64_t slot_of(uint64_t k) {
    return (k & 0xffffffffu) + (k >> 32) * 0x9E3779B97F4A7C15ULL;
}

static Entry *lookup(Table *t, uint64_t key) {
    uint64_t m = t->cap - 1;
    for (uint64_t i = slot_of(key) & m;; i = (i + 1) & m) {
        Slot *s = &t->slots[i];
        if (!s->e || s->key == key) return s->e;
    }
}

static int insert(Table *t, Entry *e) {
    if (2 * (t->count + 1) > t->cap) {
        int64_t cap = 2 * t->cap;
        Slot *s = calloc(cap, sizeof(Slot));
        if (!s) return -1;
        for (int64_t i = 0; i < t->cap; i++) {
            Slot x = t->slots[i];
            if (!x.e) continue;
            uint64_t j = slot_of(x.key) & (cap - 1);
            while (s[j].e) j = (j + 1) & (cap - 1);
            s[j] = x;
        }
        free(t->slots);
        t->slots = s;
        t->cap = cap;
    }
    uint64_t m = t->cap - 1, i = slot_of(e->key) & m;
    while (t->slots[i].e) i = (i + 1) & m;
    t->slots[i].key = e->key;
    t->slots[i].e = e;
    t->count++;
    return 0;
}

static Entry *new_entry(Ps *ps, Table *t, uint64_t key, uint8_t state, double now) {
    Entry *e = table_alloc(ps, t);
    if (!e) return NULL;
    e->key = key;
    e->seq = ps->seq++;
    e->state = state;
    e->created = now;
    e->timeout = rto_value(&ps->rto);
    e->deadline = now + e->timeout;
    e->completed = -1.0;
    if (insert(t, e)) { t->used--; return NULL; }
    if (state == E_OPEN) {
        e->prev = ps->open.prev; e->nxt = &ps->open;
        ps->open.prev->nxt = e; ps->open.prev = e;
    }
    return e;
}

/* ParameterServer._in_window's pruning: drop job's rounds before ``newest - 1`` */
void ina_ps_set_newest(Ps *ps, int64_t job, int64_t newest) {
    Job *j = find_job(ps, job);
    if (j) { j->has_newest = 1; j->newest = newest; }
    for (int64_t i = 0; i < ps->ntables;) {
        Table *t = &ps->tables[i];
        if (t->job == job && t->round < newest - 1) {
            table_free(ps, t);
            ps->tables[i] = ps->tables[--ps->ntables];
        } else {
            i++;
        }
    }
}

/* Take an entry over into Python: its data, and from now on every frame of its key is handed
 * off. Returns its state before (0: none). meta: seq, bitmap, overflow; times: created,
 * deadline, timeout, completed; acc: K lanes. */
int64_t ina_ps_take(Ps *ps, int64_t job, int64_t round, int64_t sub, int64_t frag, int64_t *meta, double *times,
                    int64_t *acc) {
    Table *t = find_table(ps, job, round, 0);
    if (!t) return 0;
    Entry *e = lookup(t, (uint64_t)sub << 32 | (uint64_t)frag);
    if (!e) return 0;
    int64_t state = e->state;
    meta[0] = e->seq; meta[1] = e->bitmap; meta[2] = e->overflow;
    times[0] = e->created; times[1] = e->deadline; times[2] = e->timeout; times[3] = e->completed;
    memcpy(acc, e->acc, ps->lanes * sizeof(int64_t));
    if (state == E_OPEN) { e->prev->nxt = e->nxt; e->nxt->prev = e->prev; }
    e->state = E_PY;
    return state;
}

/* A key Python created an entry for: C hands its frames off from now on. The new stub's
 * sequence number (its creation order), or -1 if C knew the key. */
int64_t ina_ps_mark_py(Ps *ps, int64_t job, int64_t round, int64_t sub, int64_t frag) {
    Table *t = find_table(ps, job, round, 1);
    if (!t) return -2;
    uint64_t key = (uint64_t)sub << 32 | (uint64_t)frag;
    if (lookup(t, key)) return -1;
    Entry *e = new_entry(ps, t, key, E_PY, 0.0);
    return e ? e->seq : -2;
}

/* Every live entry (``only_due``: only the open ones due at ``now``) for Python, up to cap,
 * each taken over (state PY). keys: job, round, sub, frag, state per entry (5 each); meta and
 * times as ina_ps_take (3 and 4 each); acc: K each. Returns how many. */
int64_t ina_ps_collect(Ps *ps, int64_t only_due, double now, int64_t cap, int64_t *keys, int64_t *meta, double *times,
                       int64_t *acc) {
    int64_t n = 0;
    for (int64_t ti = 0; ti < ps->ntables; ti++) {
        Table *t = &ps->tables[ti];
        for (int64_t i = 0; i < t->cap && n < cap; i++) {
            Entry *e = t->slots[i].e;
            if (!e || e->state == E_PY) continue;
            if (only_due && (e->state != E_OPEN || e->deadline > now)) continue;
            int64_t *k = keys + 5 * n;
            k[0] = t->job; k[1] = t->round; k[2] = (int64_t)(e->key >> 32); k[3] = (int64_t)(e->key & 0xffffffffu);
            k[4] = e->state;
            ina_ps_take(ps, t->job, t->round, k[2], k[3], meta + 3 * n, times + 4 * n, acc + ps->lanes * n);
            n++;
        }
    }
    return n;
}

int64_t ina_ps_live(Ps *ps, int64_t only_due, double now) {
    int64_t n = 0;
    if (only_due) {
        for (Entry *e = ps->open.nxt; e != &ps->open; e = e->nxt) n += e->deadline <= now;
        return n;
    }
    for (int64_t ti = 0; ti < ps->ntables; ti++)
        for (int64_t i = 0; i < ps->tables[ti].cap; i++) {
            Entry *e = ps->tables[ti].slots[i].e;
            n += e && e->state != E_PY;
        }
    return n;
}

double ina_ps_next_deadline(const Ps *ps) {
    double d = INFINITY;
    for (const Entry *e = ps->open.nxt; e != &ps->open; e = e->nxt)
        if (e->deadline < d) d = e->deadline;
    return d;
}

static void ps_complete(Ps *ps, Job *j, Table *t, Entry *e, double now) {
    /* _maybe_complete without stand-ins: saturate, RESULT to every worker, in the job's order */
    e->state = E_DONE;
    e->completed = now;
    e->prev->nxt = e->nxt; e->nxt->prev = e->prev;
    ps->completed++;
    rto_sample(&ps->rto, now - e->created);
    uint8_t *fr = ps->scratch + ps->out_n * ps->frame_len;
    uint8_t *p = fr + PREFIX, *ln = p + HDR;
    int over = e->overflow;
    for (int64_t i = 0; i < ps->lanes; i++) {
        int64_t v = e->acc[i];
        if (v > 2147483647LL) { v = 2147483647LL; over = 1; }
        if (v < -2147483648LL) { v = -2147483648LL; over = 1; }
        put32(ln + 4 * i, (uint32_t)(int32_t)v);
    }
    e->overflow = over;
    p[0] = 2 << 4;
    p[1] = (j->relay_node ? F_RELAY : F_RESULT) | (over ? F_OVERFLOW : 0);
    put16(p + 2, (uint16_t)j->id);
    put16(p + 4, (uint16_t)j->relay_node);
    put16(p + 6, (uint16_t)(e->key >> 32));
    put32(p + 8, (uint32_t)e->key);
    p[12] = 255; p[13] = (uint8_t)j->nworkers; p[14] = (uint8_t)j->nworkers; p[15] = 0;
    put32(p + 16, j->mask);
    put32(p + 20, (uint32_t)t->round);
    if (j->relay_node) {            /* one frame, the node multicasts it (rule 1) */
        memcpy(fr, j->relay_prefix, PREFIX);
        ps->out[ps->out_n++] = fr;
        ps->results_sent++;
        ps->results_relayed++;
        return;
    }
    for (int64_t w = 0; w < j->nworkers; w++) {
        uint8_t *f = ps->scratch + ps->out_n * ps->frame_len;
        if (w) memcpy(f + PREFIX, p, HDR + 4 * ps->lanes);
        memcpy(f, j->prefix[w], PREFIX);
        ps->out[ps->out_n++] = f;
    }
    ps->results_sent += j->nworkers;
}

/* ParameterServer._gap: a first-copy packet (plain, partial, collision) of fragment ``key``
 * carried ``bitmap``; each worker's copies of a sub-model take one FIFO path, so the entry of
 * the fragment before it, if still open and lacking some of those workers, lost their copies:
 * it is due now (the timer recovers it). 1 if that entry is the Python core's, else 0. */
static int ps_gap(Table *t, uint64_t key, uint32_t bitmap, double now) {
    if ((key & 0xffffffffu) == 0) return 0;
    Entry *e = lookup(t, key - 1);
    if (!e) return 0;
    if (e->state == E_PY) return 1;
    if (e->state == E_OPEN && (bitmap & ~e->bitmap) && e->deadline > now) e->deadline = now;
    return 0;
}

int ina_ps_gap(Ps *ps, int64_t job, int64_t round, int64_t sub, int64_t frag, int64_t bitmap, double now) {
    Table *t = find_table(ps, job, round, 0);
    return t ? ps_gap(t, (uint64_t)sub << 32 | (uint64_t)frag, (uint32_t)bitmap, now) : 0;
}

/* ParameterServer._handle for a payload: OK, HANDOFF (the Python core takes it), NEWROUND
 * (the Python core must note a newer round first; then call again) or GAP_PY (handled; the
 * Python core applies the gap rule to its entry). */
int ina_ps_payload(Ps *ps, const uint8_t *p, double now) {
    int flags = p[1];
    Job *j = find_job(ps, be16(p + 2));
    if (!j || j->python_only || (flags & F_RESEND)) return HANDOFF;
    int kind;
    if (flags & F_PREEMPTED) kind = flags & F_REMINDER ? K_DRAINED : K_PREEMPTED;
    else if (flags & (F_REMINDER | F_RELAY)) kind = K_REMINDER;     /* ours, come back */
    else if (flags & F_RESULT) kind = K_SWITCH_RESULT;
    else if (flags & F_COLLISION) kind = K_COLLISION;
    else kind = p[14] > 1 ? K_PARTIAL : K_PLAIN;
    if (kind == K_REMINDER) { ps->counts[kind]++; return OK; }     /* one of ours that came back */
    uint32_t bitmap = be32(p + 16);
    if ((bitmap & ~j->mask) || bitmap == 0) {
        ps->counts[kind]++; ps->counts[K_NO_CONTRIBUTION]++;
        return OK;
    }
    int64_t rnd = be32(p + 20);
    if (!j->has_newest || rnd > j->newest) return NEWROUND;
    if (rnd < j->newest - 1) { ps->counts[kind]++; ps->counts[K_STALE]++; return OK; }
    Table *t = find_table(ps, j->id, rnd, 1);
    if (!t) return -ENOMEM;
    uint64_t key = (uint64_t)be16(p + 6) << 32 | be32(p + 8);
    Entry *e = lookup(t, key);
    if (e && e->state == E_PY) return HANDOFF;
    if (ps->out_n + j->nworkers > ps->out_cap) return -ENOBUFS;
    ps->counts[kind]++;
    if (!e && !(e = new_entry(ps, t, key, E_OPEN, now))) return -ENOMEM;
    if (e->state == E_DONE) { ps->counts[K_LATE]++; return OK; }
    if (bitmap & e->bitmap) { ps->counts[K_OVERLAP]++; return OK; }
    const uint8_t *ln = p + HDR;
    for (int64_t i = 0; i < ps->lanes; i++) e->acc[i] += (int32_t)be32(ln + 4 * i);
    e->bitmap |= bitmap;
    e->overflow |= (flags & F_OVERFLOW) != 0;
    if (e->bitmap == j->mask) ps_complete(ps, j, t, e, now);
    if (kind == K_PLAIN || kind == K_PARTIAL || kind == K_COLLISION)
        return ps_gap(t, key, bitmap, now) ? GAP_PY : OK;
    return OK;
}

int ina_ps_frame(Ps *ps, const uint8_t *f, int64_t len, double now) {
    if (!fast_layout(f, len, ps->lanes)) return HANDOFF;
    return ina_ps_payload(ps, f + PREFIX, now);
}

/* ------------------------------------------------------------------ UDP */
#define GSO_MAX 64          /* segments per UDP_SEGMENT send (UDP_MAX_SEGMENTS of older kernels) */
#define CMSG_BYTES 64

typedef struct {
    int64_t fd, lanes, need, frame_len, cap, bufsize, pos, cnt, dst_port, gso;
    int64_t tx_packets, tx_bytes, rx_packets, rx_bytes, send_dropped;
    uint8_t *rxbuf;
    struct mmsghdr *rxmsgs;
    struct iovec *rxiov;
    struct sockaddr_in *rxnames;
    int64_t txcap;
    struct mmsghdr *txmsgs;
    struct iovec *txiov;
    struct sockaddr_in *txnames;
    /* the datagram handed off: its payload and source */
    const uint8_t *ho_data;
    int64_t ho_len;
    uint8_t ho_source[6];
    /* GRO: a ring slot may hold several segments; where the next one starts */
    int64_t seg_off, seg_size, last_pos, last_off;
    uint8_t *rxctl, *txctl;
    int32_t *txgid;
    const uint8_t **txsorted;
} Io;

/* gso: batch datagrams to one destination into UDP_SEGMENT sends and read UDP_GRO-coalesced
 * ones (the caller enables UDP_GRO on the socket); only for loopback, where no switch sees the
 * packets: a packet socket on a real interface (p4sim on Mininet's veths) would see a GSO
 * super-packet, not the datagrams. On the wire of lo, each segment is one datagram. */
void ina_io_free(Io *io);

Io *ina_io_new(int64_t fd, int64_t lanes, int64_t cap, int64_t txcap, int64_t dst_port, int64_t gso) {
    Io *io = calloc(1, sizeof(Io));
    if (!io) return NULL;
    io->fd = fd; io->lanes = lanes; io->need = HDR + 4 * lanes; io->frame_len = PREFIX + io->need;
    io->gso = gso;
    /* a coalesced datagram is at most 64 KiB, whatever the segment size */
    io->cap = cap; io->bufsize = (gso ? 65536 : io->need) + 64; io->txcap = txcap;
    io->dst_port = dst_port;
    io->rxctl = calloc(cap, CMSG_BYTES);
    io->txctl = calloc(txcap, CMSG_BYTES);
    io->txgid = calloc(txcap, sizeof(int32_t));
    io->txsorted = calloc(txcap, sizeof(uint8_t *));
    if (!io->rxctl || !io->txctl || !io->txgid || !io->txsorted) { ina_io_free(io); return NULL; }
    io->rxbuf = malloc(cap * io->bufsize);
    io->rxmsgs = calloc(cap, sizeof(struct mmsghdr));
    io->rxiov = calloc(cap, sizeof(struct iovec));
    io->rxnames = calloc(cap, sizeof(struct sockaddr_in));
    io->txmsgs = calloc(txcap, sizeof(struct mmsghdr));
    io->txiov = calloc(txcap, sizeof(struct iovec));
    io->txnames = calloc(txcap, sizeof(struct sockaddr_in));
    if (!io->rxbuf || !io->rxmsgs || !io->rxiov || !io->rxnames || !io->txmsgs || !io->txiov || !io->txnames) {
        ina_io_free(io);
        return NULL;
    }
    for (int64_t i = 0; i < cap; i++) {
        io->rxiov[i].iov_base = io->rxbuf + i * io->bufsize;
        io->rxiov[i].iov_len = io->bufsize;
        io->rxmsgs[i].msg_hdr.msg_iov = &io->rxiov[i];
        io->rxmsgs[i].msg_hdr.msg_iovlen = 1;
        io->rxmsgs[i].msg_hdr.msg_name = &io->rxnames[i];
        io->rxmsgs[i].msg_hdr.msg_control = io->rxctl + i * CMSG_BYTES;
    }
    return io;
}

void ina_io_free(Io *io) {
    if (!io) return;
    free(io->rxbuf); free(io->rxmsgs); free(io->rxiov); free(io->rxnames);
    free(io->txmsgs); free(io->txiov); free(io->txnames);
    free(io->rxctl); free(io->txctl); free(io->txgid); free(io->txsorted);
    free(io);
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* sendmmsg of the prepared messages. A full socket buffer: wait up to 50 ms, retry that message
 * once, else it is lost like a network drop (UdpTransport.send_many). 0, or -errno. */
static int send_msgs(Io *io, int64_t nmsgs) {
    int64_t done = 0;
    while (done < nmsgs) {
        int r = sendmmsg((int)io->fd, io->txmsgs + done, (unsigned)(nmsgs - done), 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {(int)io->fd, POLLOUT, 0};
            poll(&pfd, 1, 50);
            r = sendmmsg((int)io->fd, io->txmsgs + done, 1, 0);
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                io->send_dropped += (int64_t)io->txmsgs[done].msg_hdr.msg_iovlen;
                r = 1;
            }
        }
        if (r < 0) return -errno;
        done += r;
    }
    return 0;
}

/* GSO: the frames grouped by destination (order kept within each), GSO_MAX per message */
static int send_gso(Io *io, const uint8_t *const *frames, int64_t m) {
    uint32_t dst[64];
    int64_t cnt[64], start[64], nd = 0;
    for (int64_t i = 0; i < m; i++) {
        uint32_t d;
        memcpy(&d, frames[i] + 30, 4);
        int64_t g = 0;
        while (g < nd && dst[g] != d) g++;
        if (g == nd) {
            if (nd == 64) return 1;        /* too many destinations for one pass: no GSO */
            dst[nd] = d; cnt[nd++] = 0;
        }
        io->txgid[i] = (int32_t)g;
        cnt[g]++;
    }
    for (int64_t g = 0, acc = 0; g < nd; g++) { start[g] = acc; acc += cnt[g]; }
    for (int64_t i = 0; i < m; i++) io->txsorted[start[io->txgid[i]]++] = frames[i];
    for (int64_t i = 0; i < m; i++) {
        io->txiov[i].iov_base = (void *)(io->txsorted[i] + PREFIX);
        io->txiov[i].iov_len = io->need;
    }
    int64_t nmsgs = 0;
    for (int64_t i = 0; i < m;) {
        uint32_t d;
        memcpy(&d, io->txsorted[i] + 30, 4);
        int64_t j = i + 1, most = 65000 / io->need < GSO_MAX ? 65000 / io->need : GSO_MAX;   /* 64 KiB a send */
        while (j < m && j - i < most && memcmp(io->txsorted[j] + 30, &d, 4) == 0) j++;
        struct sockaddr_in *a = &io->txnames[nmsgs];
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)io->dst_port);
        memcpy(&a->sin_addr, &d, 4);
        struct msghdr *h = &io->txmsgs[nmsgs].msg_hdr;
        h->msg_name = a; h->msg_namelen = sizeof(*a);
        h->msg_iov = &io->txiov[i]; h->msg_iovlen = j - i;
        if (j - i > 1) {
            h->msg_control = io->txctl + nmsgs * CMSG_BYTES;
            h->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
            struct cmsghdr *c = CMSG_FIRSTHDR(h);
            c->cmsg_level = SOL_UDP; c->cmsg_type = UDP_SEGMENT; c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t seg = (uint16_t)io->need;
            memcpy(CMSG_DATA(c), &seg, sizeof(seg));
        } else {
            h->msg_control = NULL; h->msg_controllen = 0;
        }
        nmsgs++;
        i = j;
    }
    int r = send_msgs(io, nmsgs);
    if (r == -EINVAL || r == -EIO || r == -EOPNOTSUPP) { io->gso = 0; return 1; }   /* no GSO here after all */
    return r;
}

static void one_msg(Io *io, int64_t i, const uint8_t *f) {
    struct sockaddr_in *a = &io->txnames[i];
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)io->dst_port);
    memcpy(&a->sin_addr, f + 30, 4);
    io->txiov[i].iov_base = (void *)(f + PREFIX);
    io->txiov[i].iov_len = io->need;
    struct msghdr *h = &io->txmsgs[i].msg_hdr;
    h->msg_name = a; h->msg_namelen = sizeof(*a);
    h->msg_iov = &io->txiov[i]; h->msg_iovlen = 1;
    h->msg_control = NULL; h->msg_controllen = 0;
}

/* Send n frames (pointers to whole frames): their INA part to the IPv4 destination in the
 * frame, UDP port dst_port. 0, or -errno. */
int ina_io_send(Io *io, const uint8_t *const *frames, int64_t n) {
    int64_t pos = 0;
    while (pos < n) {
        int64_t m = n - pos < io->txcap ? n - pos : io->txcap;
        io->tx_packets += m;
        io->tx_bytes += m * io->frame_len;
        int r = io->gso ? send_gso(io, frames + pos, m) : 1;
        if (r == 1) {                 /* one message per datagram */
            for (int64_t i = 0; i < m; i++) one_msg(io, i, frames[pos + i]);
            r = send_msgs(io, m);
        }
        if (r < 0) return r;
        pos += m;
    }
    return 0;
}

static void io_reset_msgs(Io *io) {
    for (int64_t i = 0; i < io->cap; i++) {
        io->rxmsgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
        io->rxmsgs[i].msg_hdr.msg_controllen = io->gso ? CMSG_BYTES : 0;
    }
}

/* Wait until a datagram is there or ``wait`` seconds passed (0: don't wait); then read what
 * is there into the ring. Returns how many were read, or -errno. */
static int io_fill(Io *io, double wait) {
    io_reset_msgs(io);
    int r = recvmmsg((int)io->fd, io->rxmsgs, (unsigned)io->cap, MSG_DONTWAIT, NULL);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait > 0) {
        struct pollfd pfd = {(int)io->fd, POLLIN, 0};
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        int p = ppoll(&pfd, 1, &ts, NULL);
        if (p < 0 && errno != EINTR) return -errno;
        if (p <= 0) return 0;
        r = recvmmsg((int)io->fd, io->rxmsgs, (unsigned)io->cap, MSG_DONTWAIT, NULL);
    }
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
    io->pos = 0;
    io->cnt = r;
    io->seg_off = 0;
    return r;
}

/* the segment size of ring slot i: UDP_GRO's cmsg where the kernel coalesced datagrams */
static int64_t slot_segment(Io *io, int64_t i) {
    struct msghdr *h = &io->rxmsgs[i].msg_hdr;
    int64_t len = io->rxmsgs[i].msg_len;
    if (!io->gso || !h->msg_controllen) return len;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int seg;
            memcpy(&seg, CMSG_DATA(c), sizeof(seg));
            if (seg > 0) return seg;
        }
    }
    return len;
}

/* the next INA datagram of the ring, or NULL when the ring is used up (UdpTransport._frame
 * drops the others: too short or another version) */
static const uint8_t *io_next(Io *io) {
    while (io->pos < io->cnt) {
        int64_t i = io->pos;
        int64_t total = io->rxmsgs[i].msg_len;
        if (io->seg_off == 0) io->seg_size = slot_segment(io, i);
        int64_t off = io->seg_off;
        if (off >= total || io->seg_size <= 0) { io->pos++; io->seg_off = 0; continue; }
        int64_t len = total - off < io->seg_size ? total - off : io->seg_size;
        io->last_pos = i;
        io->last_off = off;
        io->seg_off = off + io->seg_size;
        if (io->seg_off >= total) { io->pos++; io->seg_off = 0; }
        const uint8_t *d = io->rxbuf + i * io->bufsize + off;
        int query = len == HDR && is_query(d);     /* the PS's query: the INA header alone */
        if ((len < io->need && !query) || (d[0] >> 4) != 2) continue;
        io->rx_packets++;
        io->rx_bytes += query ? PREFIX + HDR : io->frame_len;
        io->ho_data = d;
        io->ho_len = len;
        memcpy(io->ho_source, &io->rxnames[i].sin_port, 2);
        memcpy(io->ho_source + 2, &io->rxnames[i].sin_addr, 4);
        return d;
    }
    return NULL;
}

/* read the datagram io_next returned last once more */
static void io_unread(Io *io) {
    io->pos = io->last_pos;
    io->seg_off = io->last_off;
    io->rx_packets--;
    io->rx_bytes -= io->frame_len;
}

/* sizes of the structs, for the ctypes mirrors in hostlib/native/__init__.py to check */
int64_t ina_sizeof(int64_t which) {
    switch (which) {
    case 0: return sizeof(Rto);
    case 1: return sizeof(Worker);
    case 2: return sizeof(Job);
    case 3: return sizeof(Ps);
    case 4: return sizeof(Io);
    default: return -1;
    }
}


/* The C loops' wait, at ``*now`` (s since t0): EV_TIMER when the deadline ``dl`` is due,
 * EV_POLL when ``until`` passed, -errno on a socket error; else read what arrives by the
 * earlier of the two into the ring, set ``*now`` and return 0 (go on). */
static int io_wait(Io *io, double t0, double dl, double until, double *now) {
    *now = mono() - t0;
    if (dl <= *now) return EV_TIMER;
    if (*now >= until) return EV_POLL;
    int r = io_fill(io, (dl < until ? dl : until) - *now);
    if (r < 0) return r;
    *now = mono() - t0;
    return 0;
}

/* The next INA datagram, waiting up to ``wait`` s for one: 1 (it is io->ho_data), 0 or -errno
 * (for agents the C loops do not run, so that they read coalesced datagrams as the loops do) */
int ina_io_poll(Io *io, double wait) {
    if (io_next(io)) return 1;
    int r = io_fill(io, wait);
    if (r < 0) return r;
    return io_next(io) != NULL;
}

/* Run the worker until: its round is done (stop_on_done), ``until`` (s since t0) passes, a
 * timer (ours, or ``py_deadline``) is due, or a frame needs the Python core (EV_FRAME: the
 * datagram is io->ho_data). Replies are sent before returning. */
int ina_worker_udp(Worker *w, Io *io, double t0, double until, double py_deadline, int64_t stop_on_done) {
    double now = mono() - t0;             /* one clock reading per batch, as run_udp's */
    for (;;) {
        const uint8_t *d;
        while ((d = io_next(io)) != NULL) {
            if (w->out_n + 2 * w->window + 2 > w->out_cap) {
                int r = ina_io_send(io, w->out, w->out_n);
                w->out_n = w->scratch_used = 0;
                if (r < 0) return r;
            }
            if (ina_worker_payload(w, d, now) == HANDOFF) {
                int r = ina_io_send(io, w->out, w->out_n);
                w->out_n = w->scratch_used = 0;
                return r < 0 ? r : EV_FRAME;
            }
        }
        if (w->out_n) {
            int r = ina_io_send(io, w->out, w->out_n);
            w->out_n = w->scratch_used = 0;
            if (r < 0) return r;
        }
        if (stop_on_done && w->n_done == w->n) return EV_DONE;
        double dl = ina_worker_next_deadline(w);
        if (py_deadline < dl) dl = py_deadline;
        int r = io_wait(io, t0, dl, until, &now);
        if (r) return r;
    }
}

/* ina_worker_udp for a WorkerGroup: several Workers (one per job) behind one socket, a frame
 * to the Worker of its job id; done when all are */
int ina_group_udp(Worker **ws, int64_t nw, Io *io, double t0, double until, double py_deadline,
                  int64_t stop_on_done) {
    double now = mono() - t0;
    for (;;) {
        const uint8_t *d;
        while ((d = io_next(io)) != NULL) {
            Worker *w = NULL;
            for (int64_t i = 0; i < nw; i++)
                if (ws[i]->job == be16(d + 2)) { w = ws[i]; break; }
            int c = HANDOFF;
            if (w) {
                if (w->out_n + 2 * w->window + 2 > w->out_cap) {
                    int r = ina_io_send(io, w->out, w->out_n);
                    w->out_n = w->scratch_used = 0;
                    if (r < 0) return r;
                }
                c = ina_worker_payload(w, d, now);
            }
            if (c == HANDOFF) {
                for (int64_t i = 0; i < nw; i++) {
                    int r = ina_io_send(io, ws[i]->out, ws[i]->out_n);
                    ws[i]->out_n = ws[i]->scratch_used = 0;
                    if (r < 0) return r;
                }
                return EV_FRAME;
            }
        }
        int all_done = 1;
        double dl = py_deadline;
        for (int64_t i = 0; i < nw; i++) {
            Worker *w = ws[i];
            if (w->out_n) {
                int r = ina_io_send(io, w->out, w->out_n);
                w->out_n = w->scratch_used = 0;
                if (r < 0) return r;
            }
            all_done &= w->n_done == w->n;
            double x = ina_worker_next_deadline(w);
            if (x < dl) dl = x;
        }
        if (stop_on_done && all_done) return EV_DONE;
        int r = io_wait(io, t0, dl, until, &now);
        if (r) return r;
    }
}

int ina_ps_udp(Ps *ps, Io *io, double t0, double until, double py_deadline) {
    double now = mono() - t0;
    for (;;) {
        const uint8_t *d;
        while ((d = io_next(io)) != NULL) {
            if (ps->out_n + 32 > ps->out_cap) {
                int r = ina_io_send(io, ps->out, ps->out_n);
                ps->out_n = 0;
                if (r < 0) return r;
            }
            int c = ina_ps_payload(ps, d, now);
            if (c == OK) continue;
            int r = ina_io_send(io, ps->out, ps->out_n);
            ps->out_n = 0;
            if (r < 0) return r;
            if (c < 0) return c;
            if (c == NEWROUND) {
                io_unread(io);                    /* handled again once Python noted the round */
                return EV_NEWROUND;
            }
            return c == GAP_PY ? EV_GAP : EV_FRAME;
        }
        if (ps->out_n) {
            int r = ina_io_send(io, ps->out, ps->out_n);
            ps->out_n = 0;
            if (r < 0) return r;
        }
        double dl = ina_ps_next_deadline(ps);
        if (py_deadline < dl) dl = py_deadline;
        int r = io_wait(io, t0, dl, until, &now);
        if (r) return r;
    }
}
