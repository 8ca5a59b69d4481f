/* The worker core's common case (hostlib.worker.Worker): the current round's results, fast
 * retransmits and the window's first copies. hostlib/native/worker.py's NativeWorker binds it
 * to a Worker and hands everything else to the Python core. */
#include "inahost.h"

static inline void w_emit(Worker *w, const uint8_t *frame) { w->out[w->out_n++] = frame; }

static void w_resend(Worker *w, int64_t idx) {
    /* Worker._resend of a first retransmission: the first copy flagged RETRY, to its node, if
     * it has one and node_tries allows; else an ask to the PS (node 0, RESEND, count 0; the own
     * bitmap bit is already the first copy's) */
    uint8_t *fr = w->scratch + w->scratch_used * w->frame_len;
    w->scratch_used++;
    memcpy(fr, w->wire + idx * w->frame_len, w->frame_len);
    if (w->node_tries >= w->retx[idx] && be16(fr + PREFIX + 4) != 0) {
        fr[PREFIX + 1] = F_RETRY;
    } else {
        /* an ask: the INA header alone, count 0 (the PS holds our copy or queries it) */
        fr[PREFIX + 1] = F_RESEND;
        put16(fr + PREFIX + 4, 0);
        fr[PREFIX + 14] = 0;
        put16(fr + 16, 20 + 8 + HDR);
        put16(fr + 38, 8 + HDR);
        ipv4_checksum(fr);
    }
    w_emit(w, fr);
}

/* Worker._fastest_path: the smallest smoothed RTT of the sub-models' paths (0 before any sample) */
static double w_fastest_path(const Worker *w) {
    double fastest = INFINITY;
    for (int64_t q = 0; q < w->nsubs; q++)
        if (w->path_srtt[q] >= 0 && w->path_srtt[q] < fastest) fastest = w->path_srtt[q];
    return isinf(fastest) ? 0.0 : fastest;
}

/* Worker.retry_wait: the resends' round trip (the RTO floor before one), at least the fastest
 * path's srtt, at most the maximum */
static double w_retry_wait(const Worker *w) {
    double retry = w->resend_rtt.has_srtt ? rto_value(&w->resend_rtt) : w->rto.minimum;
    double fastest = w_fastest_path(w);
    if (fastest > retry) retry = fastest;
    return retry < w->rto.maximum ? retry : w->rto.maximum;
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

/* Worker._retime_first_copies: the first measured RTO bounds the first copies sent under the
 * initial one */
static void w_retime_first_copies(Worker *w) {
    double rto = rto_value(&w->rto);
    for (int64_t e = w->base; e < w->next; e++)
        if (w->pend[e] && !w->retx[e] && w->first_sent[e] + rto < w->deadline[e]) {
            w->deadline[e] = w->first_sent[e] + rto;
            w->timeout[e] = rto;
        }
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
            int guessed = !w->rto.has_srtt;
            rto_sample(&w->rto, rtt);
            if (guessed) w_retime_first_copies(w);
            w_path_sample(w, w->sub[idx], rtt);
            w->path_clean[w->sub[idx]] = now;
            if (w->later[idx] < 0) w->n_recovering--;     /* presumed lost, yet answered */
        } else {
            w->n_recovering--;
            w->recovery_answered = now;
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
    double retry = w_retry_wait(w);
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

/* Worker.on_timer: the expired fragments there is evidence against (a fragment sent later has
 * its result) resent, and per call the oldest expired one without such evidence as a probe; the
 * others re-armed. Then the window is filled if anything went. */
void ina_worker_timer(Worker *w, double now) {
    int probed = 0, any = 0;
    double answered = w->newest_answered;
    for (int64_t e = w->base; e < w->next; e++) {
        if (!w->pend[e] || w->deadline[e] > now) continue;
        int evidence = w->first_sent[e] < answered;
        if (!evidence && probed) {                   /* no evidence yet: wait another timeout */
            w->deadline[e] = now + w->timeout[e];
            continue;
        }
        probed = probed || !evidence;
        int tries = w->retx[e];
        if (!tries) {
            if (w->later[e] >= 0) w->n_recovering++;    /* else a PS result freed its slot already */
            w->timeout[e] = w_retry_wait(w);
        } else if (tries == 1 && w->retry_rtt.has_srtt) {      /* the third try */
            double rto = rto_value(&w->rto), backoff = 2.0 * w->timeout[e];   /* Rto.backoff, no floor */
            if (w->rto.max_backoff * rto < backoff) backoff = w->rto.max_backoff * rto;
            if (w->rto.maximum < backoff) backoff = w->rto.maximum;
            double retry = rto_value(&w->retry_rtt);
            w->timeout[e] = retry < backoff ? retry : backoff;
        } else {
            /* doubling, up to ANSWER_BACKOFF measured answer times (at least the fastest path's
             * srtt; max_backoff RTOs before any), the RTO ceiling once no retransmission was
             * answered for max_backoff such caps */
            const Rto *measured = w->retry_rtt.has_srtt ? &w->retry_rtt : &w->resend_rtt;
            double cap = w->rto.max_backoff * rto_value(&w->rto);
            if (measured->has_srtt) {
                double fastest = w_fastest_path(w);
                cap = ANSWER_BACKOFF * rto_value(measured);
                if (fastest > cap) cap = fastest;
            }
            if (now - w->recovery_answered > w->rto.max_backoff * cap) cap = w->rto.maximum;
            double t = 2.0 * w->timeout[e];
            if (cap < t) t = cap;
            if (w->rto.maximum < t) t = w->rto.maximum;
            w->timeout[e] = t;
        }
        w->retx[e] = (uint8_t)(tries + 1 < 255 ? tries + 1 : 255);
        w->deadline[e] = now + w->timeout[e];
        w->resent_at[e] = now;
        w->resent++;
        w_resend(w, e);
        any = 1;
    }
    if (any) ina_worker_fill(w, now);
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
