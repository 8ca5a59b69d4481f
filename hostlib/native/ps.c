/* The PS core's common case (hostlib.ps.ParameterServer): network contributions of jobs whose
 * rounds have every worker, completed here and multicast (or relayed), and the RESENDs of the
 * fragments completed here (a worker lost the result). Entries are owned per
 * key: one the Python core needed moves there for good (E_PY) and C hands its frames over.
 * hostlib/native/ps.py's NativePs binds it to a ParameterServer. */
#include "inahost.h"

#define CHUNK 1024                  /* entries allocated together: a round's entries lie in order */

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

#define SPARE_BYTES (256LL << 20)   /* entry chunks kept for reuse, at most */

/* a round's table pruned: its entries leave the open list, its chunks and slot array stay for
 * the next rounds */
static void table_free(Ps *ps, Table *t) {
    for (int64_t i = 0; i < t->cap; i++) {
        Entry *e = t->slots[i].e;
        if (e && e->state == E_OPEN) { e->prev->nxt = e->nxt; e->nxt->prev = e->prev; }
    }
    int64_t most = SPARE_BYTES / (CHUNK * (int64_t)(sizeof(Entry) + ps->lanes * sizeof(int64_t)));
    for (int64_t i = 0; i < t->nchunks; i++) {
        if (ps->nspare_chunks == ps->spare_chunks_cap && ps->spare_chunks_cap < most) {
            int64_t cap = ps->spare_chunks_cap ? 2 * ps->spare_chunks_cap : 64;
            if (cap > most) cap = most;
            uint8_t **c = realloc(ps->spare_chunks, cap * sizeof(uint8_t *));
            if (c) { ps->spare_chunks = c; ps->spare_chunks_cap = cap; }
        }
        if (ps->nspare_chunks < ps->spare_chunks_cap) ps->spare_chunks[ps->nspare_chunks++] = t->chunks[i];
        else free(t->chunks[i]);
    }
    free(t->chunks);
    if (t->cap > ps->spare_slots_cap) {       /* keep the largest slot array */
        free(ps->spare_slots);
        ps->spare_slots = t->slots;
        ps->spare_slots_cap = t->cap;
    } else {
        free(t->slots);
    }
}

/* an empty slot array of ``cap`` slots: the spare one if it is that large (cleared), else new */
static Slot *slots_new(Ps *ps, int64_t cap) {
    if (ps->spare_slots && ps->spare_slots_cap == cap) {
        Slot *s = ps->spare_slots;
        ps->spare_slots = NULL;
        ps->spare_slots_cap = 0;
        memset(s, 0, cap * sizeof(Slot));
        return s;
    }
    return calloc(cap, sizeof(Slot));
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
        uint8_t *chunk = ps->nspare_chunks ? ps->spare_chunks[--ps->nspare_chunks] : malloc(CHUNK * size);
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
    for (int64_t i = 0; i < ps->nspare_chunks; i++) free(ps->spare_chunks[i]);
    free(ps->spare_chunks);
    free(ps->spare_slots);
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
    t->job = job; t->round = round; t->cap = ps->spare_slots_cap > 1024 ? ps->spare_slots_cap : 1024;
    t->slots = slots_new(ps, t->cap);
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
    e->relay_state = -2;
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
 * off. Returns its state before (0: none). meta: seq, bitmap, overflow, relay_state; times: created,
 * deadline, timeout, completed; acc: K lanes. */
int64_t ina_ps_take(Ps *ps, int64_t job, int64_t round, int64_t sub, int64_t frag, int64_t *meta, double *times,
                    int64_t *acc) {
    Table *t = find_table(ps, job, round, 0);
    if (!t) return 0;
    Entry *e = lookup(t, (uint64_t)sub << 32 | (uint64_t)frag);
    if (!e) return 0;
    int64_t state = e->state;
    meta[0] = e->seq; meta[1] = e->bitmap; meta[2] = e->overflow; meta[3] = e->relay_state;
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
 * times as ina_ps_take (4 each); acc: K each. Returns how many. */
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
            ina_ps_take(ps, t->job, t->round, k[2], k[3], meta + 4 * n, times + 4 * n, acc + ps->lanes * n);
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

/* the frame of a complete entry's RESULT (ParameterServer._result_payload), its lanes the
 * saturated sum, addressed with ``prefix``; ``relay``: the node that multicasts it (RELAY) or 0 */
static void result_frame(Ps *ps, Job *j, Table *t, Entry *e, int64_t relay, const uint8_t *prefix) {
    uint8_t *fr = ps->scratch + ps->out_n * ps->frame_len;
    uint8_t *p = fr + PREFIX, *ln = p + HDR;
    memcpy(fr, prefix, PREFIX);
    for (int64_t i = 0; i < ps->lanes; i++) {
        int64_t v = e->acc[i];
        v = v > 2147483647LL ? 2147483647LL : (v < -2147483648LL ? -2147483648LL : v);
        put32(ln + 4 * i, (uint32_t)(int32_t)v);
    }
    p[0] = INA_VERSION << 4;
    p[1] = (relay ? F_RELAY : F_RESULT) | (e->overflow ? F_OVERFLOW : 0);
    put16(p + 2, (uint16_t)j->id);
    put16(p + 4, (uint16_t)relay);
    put16(p + 6, (uint16_t)(e->key >> 32));
    put32(p + 8, (uint32_t)e->key);
    p[12] = WORKER_AGGREGATE; p[13] = (uint8_t)j->nworkers; p[14] = (uint8_t)j->nworkers; p[15] = 0;
    put32(p + 16, j->mask);
    put32(p + 20, (uint32_t)t->round);
    ps->out[ps->out_n++] = fr;
}

static void ps_complete(Ps *ps, Job *j, Table *t, Entry *e, double now) {
    /* _maybe_complete without stand-ins: saturate, RESULT to every worker, in the job's order */
    e->state = E_DONE;
    e->completed = now;
    e->prev->nxt = e->nxt; e->nxt->prev = e->prev;
    ps->completed++;
    rto_sample(&ps->rto, now - e->created);
    for (int64_t i = 0; i < ps->lanes; i++)
        if (e->acc[i] > 2147483647LL || e->acc[i] < -2147483648LL) { e->overflow = 1; break; }
    if (j->relay_node) {            /* one frame, the node multicasts it (rule 1) */
        result_frame(ps, j, t, e, j->relay_node, j->relay_prefix);
        e->relay_state = -1;
        ps->results_sent++;
        ps->results_relayed++;
        return;
    }
    result_frame(ps, j, t, e, 0, j->prefix[0]);
    uint8_t *first = ps->scratch + (ps->out_n - 1) * ps->frame_len;
    for (int64_t w = 1; w < j->nworkers; w++) {
        uint8_t *f = ps->scratch + ps->out_n * ps->frame_len;
        memcpy(f, j->prefix[w], PREFIX);
        memcpy(f + PREFIX, first + PREFIX, HDR + 4 * ps->lanes);
        ps->out[ps->out_n++] = f;
    }
    ps->results_sent += j->nworkers;
}

/* ParameterServer._serve, a RESEND or an ask of an entry C completed: a worker lost its result
 * (or its copy or ask crossed the result on its way); OK, or HANDOFF for anything the Python
 * core decides (an open or unknown entry: a recovery; a worker the job lacks) */
static int ps_resend(Ps *ps, Job *j, const uint8_t *p, double now) {
    int64_t worker = p[12], k = 0, kind = is_ask(p) ? K_ASK : K_RESEND;
    while (k < j->nworkers && j->wid[k] != worker) k++;
    if (k == j->nworkers) return HANDOFF;
    int64_t rnd = be32(p + 20);
    if (!j->has_newest || rnd > j->newest) return NEWROUND;
    if (rnd < j->newest - 1) { ps->counts[kind]++; ps->counts[K_STALE]++; return OK; }
    Table *t = find_table(ps, j->id, rnd, 0);
    Entry *e = t ? lookup(t, (uint64_t)be16(p + 6) << 32 | be32(p + 8)) : NULL;
    if (!e || e->state != E_DONE) return HANDOFF;
    if (ps->out_n + 1 > ps->out_cap) return -ENOBUFS;
    ps->counts[kind]++;
    if (ps->query_srtt >= 0 && now - e->completed < ps->query_srtt) {
        ps->counts[K_CROSSED]++;    /* sent before the result could reach it: that is on its way */
        return OK;
    }
    ps->results_resent++;
    if (e->relay_state >= 0 && worker != e->relay_state) {
        /* a second worker lacks a relayed result: the relay was lost before the node */
        e->relay_state = -2;
        result_frame(ps, j, t, e, j->relay_node, j->relay_prefix);
        ps->results_relayed++;
        return OK;
    }
    if (e->relay_state == -1) e->relay_state = (int16_t)worker;
    result_frame(ps, j, t, e, 0, j->prefix[k]);
    return OK;
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
    if (!j || j->python_only || (flags & F_RESEND && flags & F_RESULT)) return HANDOFF;
    if (flags & F_RESEND) return ps_resend(ps, j, p, now);
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
    add_lanes(e->acc, p + HDR, ps->lanes);
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

