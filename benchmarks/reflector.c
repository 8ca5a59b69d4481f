/* A switch stand-in for host benchmarks: one UDP socket (bound to the job's PS address) that
 * aggregates the workers' INA fragments as a programmable switch at a to_multicast level would
 * (docs/protocol.md, "Switch behaviour", rules 2-4 and 8) and sends each complete aggregate to
 * every worker, one datagram per worker (the switch's multicast). No P4, no tables, no pool
 * hashing: an aggregator per (sub-model, fragment), in arrays indexed by fragment id, so the
 * hosts are measured against a "switch" that costs nothing but memory bandwidth.
 *
 * Per datagram (INA header + K big-endian int32 lanes):
 *  - another version, a REMINDER, a RESULT, or too short: ignored (counted);
 *  - a round older than the aggregator's: dropped (stale); newer: reclaims it (rule 2);
 *  - a worker already in the bitmap: dropped (duplicate); otherwise the lanes are added with
 *    int32 saturation (OVERFLOW at completion if any lane saturated), bitmaps OR-ed, counts added;
 *  - count >= fan_in: RESULT (worker_id 255, merged bitmap and count) to every worker; the
 *    aggregator keeps the result, and a RETRY or RESEND of that key and round is answered with it,
 *    RESULT|RETRY, to its sender alone (rule 8: a worker that lost its copy, or whose first copy
 *    a full socket buffer dropped, gets it from here: there is no PS behind the reflector).
 *
 * Batches: recvmmsg in, sendmmsg out; with gso (loopback only, as hostlib's native path) the
 * socket reads UDP_GRO-coalesced datagrams and sends each worker's results as UDP_SEGMENT
 * batches — on the wire of lo every segment is still one datagram. */
#include "inahost.h"     /* hostlib's C prelude: headers, UDP GSO/GRO constants, byte order */

#define MAX_SUBS 256          /* sub-model ids the reflector keeps aggregators for */
#define RX_SLOTS 64           /* recvmmsg slots (each up to 64 KiB with GRO) */
#define CMSG_BYTES 64

/* counters, mirrored by benchmarks/reflector.py (ReflectorStats) */
typedef struct {
    int64_t datagrams, fragments, ignored, stale, duplicates, completed, answered_retries,
        results_sent, send_dropped, overflowed;
} Stats;

typedef struct {
    uint32_t round, bitmap;
    int32_t count, kept, overflow, used;
} Agg;

typedef struct {
    int64_t lanes, need, fan_in, nworkers, gso;
    int fd;
    struct sockaddr_in *workers;
    Agg *slots[MAX_SUBS];
    int32_t *sums[MAX_SUBS];
    int64_t cap[MAX_SUBS];
    /* output of one receive batch: payloads, and per message an address and iovecs */
    uint8_t *tx;
    int64_t tx_n, tx_cap;
    struct mmsghdr *msgs;
    struct iovec *iov;
    struct sockaddr_in *names;
    uint8_t *ctl;
    int64_t msg_cap;
    int64_t *order;           /* a batch's results grouped by sub-model (queue_multicast) */
    uint8_t *seen;
    Stats *st;
} R;


/* the aggregator of (sub, frag), the arrays grown to hold it; NULL without memory */
static Agg *slot_of(R *r, int64_t sub, int64_t frag) {
    if (frag >= r->cap[sub]) {
        int64_t cap = r->cap[sub] ? r->cap[sub] : 1024;
        while (cap <= frag) cap *= 2;
        Agg *s = realloc(r->slots[sub], cap * sizeof(Agg));
        if (!s) return NULL;
        r->slots[sub] = s;
        int32_t *m = realloc(r->sums[sub], cap * r->lanes * sizeof(int32_t));
        if (!m) return NULL;
        r->sums[sub] = m;
        memset(s + r->cap[sub], 0, (cap - r->cap[sub]) * sizeof(Agg));
        r->cap[sub] = cap;
    }
    return &r->slots[sub][frag];
}

/* a result payload in the output buffer: the header of p with the aggregator's fields */
static uint8_t *emit_result(R *r, const uint8_t *p, const Agg *s, const int32_t *sum, int extra_flags) {
    uint8_t *o = r->tx + r->tx_n * r->need;
    r->tx_n++;
    memcpy(o, p, HDR);
    o[1] = (uint8_t)(F_RESULT | extra_flags | (s->overflow ? F_OVERFLOW : 0));
    o[12] = WORKER_AGGREGATE;
    o[14] = (uint8_t)s->count;
    put32(o + 16, s->bitmap);
    for (int64_t k = 0; k < r->lanes; k++) put32(o + HDR + 4 * k, (uint32_t)sum[k]);
    return o;
}

static void add_msg(R *r, const struct sockaddr_in *to, struct iovec *iov, int64_t niov, int seg) {
    struct mmsghdr *m = &r->msgs[r->msg_cap];
    struct msghdr *h = &m->msg_hdr;
    memset(h, 0, sizeof(*h));
    r->names[r->msg_cap] = *to;
    h->msg_name = &r->names[r->msg_cap];
    h->msg_namelen = sizeof(struct sockaddr_in);
    h->msg_iov = iov;
    h->msg_iovlen = niov;
    if (seg && niov > 1) {
        h->msg_control = r->ctl + r->msg_cap * CMSG_BYTES;
        h->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
        struct cmsghdr *c = CMSG_FIRSTHDR(h);
        c->cmsg_level = SOL_UDP; c->cmsg_type = UDP_SEGMENT; c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t size = (uint16_t)r->need;
        memcpy(CMSG_DATA(c), &size, sizeof(size));
    }
    r->msg_cap++;
}

/* sendmmsg of the batch's messages; a full socket buffer: wait up to 50 ms and retry that
 * message once, else it is lost like a network drop (the workers' retries repair it) */
static int send_all(R *r) {
    int64_t done = 0;
    while (done < r->msg_cap) {
        int n = sendmmsg(r->fd, r->msgs + done, (unsigned)(r->msg_cap - done), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {r->fd, POLLOUT, 0};
            poll(&pfd, 1, 50);
            n = sendmmsg(r->fd, r->msgs + done, 1, 0);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                r->st->send_dropped += (int64_t)r->msgs[done].msg_hdr.msg_iovlen;
                n = 1;
            }
        }
        if (n < 0 && r->gso && (errno == EINVAL || errno == EIO || errno == EOPNOTSUPP)) return -2;
        if (n < 0) return -errno;
        done += n;
    }
    return 0;
}

/* one INA payload from `from` */
static void on_payload(R *r, const uint8_t *p, int64_t len, const struct sockaddr_in *from, int64_t *multicast,
                       int64_t *nmulti) {
    Stats *st = r->st;
    int flags = p[1];
    if (len < r->need || (p[0] >> 4) != INA_VERSION || (flags & (F_REMINDER | F_RESULT))) { st->ignored++; return; }
    st->fragments++;
    int64_t sub = be16(p + 6), frag = be32(p + 8);
    uint32_t round = be32(p + 20), bitmap = be32(p + 16);
    Agg *s = sub < MAX_SUBS ? slot_of(r, sub, frag) : NULL;
    if (!s) { st->ignored++; return; }
    int32_t *sum = r->sums[sub] + frag * r->lanes;
    if (s->used && round != s->round) {
        if ((int32_t)(round - s->round) < 0) { st->stale++; return; }   /* a finished round's */
        s->used = 0;                                                     /* newer: reclaim */
    }
    if (s->used && s->kept) {
        if (flags & (F_RETRY | F_RESEND)) {         /* rule 8: its sender lost the result */
            uint8_t *o = emit_result(r, p, s, sum, F_RETRY);
            r->iov[r->msg_cap].iov_base = o;
            r->iov[r->msg_cap].iov_len = r->need;
            add_msg(r, from, &r->iov[r->msg_cap], 1, 0);
            st->answered_retries++;
        } else {
            st->duplicates++;
        }
        return;
    }
    if (s->used && (s->bitmap & bitmap)) { st->duplicates++; return; }
    const uint8_t *lane = p + HDR;
    if (!s->used) {                                  /* claim */
        s->used = 1; s->kept = 0; s->round = round; s->bitmap = 0; s->count = 0; s->overflow = 0;
        for (int64_t k = 0; k < r->lanes; k++) sum[k] = (int32_t)be32(lane + 4 * k);
    } else {                                         /* add with int32 saturation */
        int over = 0;
        for (int64_t k = 0; k < r->lanes; k++) {
            int64_t v = (int64_t)sum[k] + (int32_t)be32(lane + 4 * k);
            if (v > INT32_MAX) { v = INT32_MAX; over = 1; }
            if (v < INT32_MIN) { v = INT32_MIN; over = 1; }
            sum[k] = (int32_t)v;
        }
        s->overflow |= over;
    }
    s->bitmap |= bitmap;
    s->count += p[14];
    if (s->count >= r->fan_in) {
        s->kept = 1;
        st->completed++;
        st->overflowed += s->overflow;
        emit_result(r, p, s, sum, 0);
        multicast[(*nmulti)++] = r->tx_n - 1;
    }
}

/* the multicast of this batch's completed aggregates: per worker, its results in order, a
 * GSO batch holding one sub-model's (a worker sharded over threads by sub-model reads each
 * batch on the socket of its first datagram's sub-model) */
static void queue_multicast(R *r, const int64_t *multicast, int64_t nmulti) {
    int64_t gso = gso_max_segments();     /* segments per UDP_SEGMENT send, as hostlib's */
    int64_t most = r->gso ? (65000 / r->need < gso ? 65000 / r->need : gso) : 1;
    int64_t *order = r->order;       /* the batch's results, stably grouped by sub-model */
    int64_t n = 0;
    for (int64_t i = 0; i < nmulti; i++) r->seen[i] = 0;
    for (int64_t i = 0; i < nmulti; i++) {
        if (r->seen[i]) continue;
        uint16_t sub = be16(r->tx + multicast[i] * r->need + 6);
        for (int64_t j = i; j < nmulti; j++)
            if (!r->seen[j] && be16(r->tx + multicast[j] * r->need + 6) == sub) { order[n++] = multicast[j]; r->seen[j] = 1; }
    }
    for (int64_t w = 0; w < r->nworkers; w++) {
        for (int64_t i = 0; i < nmulti;) {
            uint16_t sub = be16(r->tx + order[i] * r->need + 6);
            int64_t m = 1;
            while (i + m < nmulti && m < most && be16(r->tx + order[i + m] * r->need + 6) == sub) m++;
            /* iovecs after the retry answers' (the first tx_cap): one per (worker, result) */
            struct iovec *iov = &r->iov[r->tx_cap + w * r->tx_cap + i];
            for (int64_t j = 0; j < m; j++) {
                iov[j].iov_base = r->tx + order[i + j] * r->need;
                iov[j].iov_len = r->need;
            }
            add_msg(r, &r->workers[w], iov, m, (int)r->gso);
            i += m;
        }
    }
    r->st->results_sent += nmulti * r->nworkers;
}

/* Runs until *stop is non-zero (checked at least every 20 ms). fd: a bound, non-blocking UDP
 * socket; workers: IPv4 addresses (network order); dst_port: the workers' port. 0 when
 * stopped, else -errno of a failed socket call. */
int64_t ina_reflect(int64_t fd, int64_t lanes, int64_t fan_in, const uint32_t *workers, int64_t nworkers,
                    int64_t dst_port, int64_t gso, volatile const int32_t *stop, Stats *st) {
    R r;
    memset(&r, 0, sizeof(r));
    r.fd = (int)fd; r.lanes = lanes; r.need = HDR + 4 * lanes; r.fan_in = fan_in; r.nworkers = nworkers;
    r.gso = gso; r.st = st;
    if (gso) {
        int on = 1;
        if (setsockopt(r.fd, SOL_UDP, UDP_GRO, &on, sizeof(on)) < 0) r.gso = 0;
    }
    int64_t bufsize = 65536 + 64;                    /* a GRO-coalesced datagram: up to 64 KiB */
    int64_t per_slot = bufsize / r.need + 1;
    r.tx_cap = RX_SLOTS * per_slot;                  /* at most one result per fragment read */
    int64_t msg_slots = r.tx_cap * (nworkers + 1);
    r.tx = malloc(r.tx_cap * r.need);
    r.msgs = calloc(msg_slots, sizeof(struct mmsghdr));
    r.iov = calloc(r.tx_cap * (nworkers + 1), sizeof(struct iovec));
    r.names = calloc(msg_slots, sizeof(struct sockaddr_in));
    r.ctl = calloc(msg_slots, CMSG_BYTES);
    r.workers = calloc(nworkers, sizeof(struct sockaddr_in));
    uint8_t *rxbuf = malloc(RX_SLOTS * bufsize);
    struct mmsghdr *rx = calloc(RX_SLOTS, sizeof(struct mmsghdr));
    struct iovec *rxiov = calloc(RX_SLOTS, sizeof(struct iovec));
    struct sockaddr_in *from = calloc(RX_SLOTS, sizeof(struct sockaddr_in));
    uint8_t *rxctl = calloc(RX_SLOTS, CMSG_BYTES);
    int64_t *multicast = malloc(r.tx_cap * sizeof(int64_t));
    r.order = malloc(r.tx_cap * sizeof(int64_t));
    r.seen = malloc(r.tx_cap);
    int64_t rc = 0;
    if (!r.tx || !r.msgs || !r.iov || !r.names || !r.ctl || !r.workers || !rxbuf || !rx || !rxiov || !from
        || !rxctl || !multicast || !r.order || !r.seen) { rc = -ENOMEM; goto out; }
    for (int64_t w = 0; w < nworkers; w++) {
        r.workers[w].sin_family = AF_INET;
        r.workers[w].sin_port = htons((uint16_t)dst_port);
        r.workers[w].sin_addr.s_addr = workers[w];
    }
    while (!*stop) {
        for (int i = 0; i < RX_SLOTS; i++) {
            rxiov[i].iov_base = rxbuf + i * bufsize;
            rxiov[i].iov_len = bufsize;
            struct msghdr *h = &rx[i].msg_hdr;
            h->msg_iov = &rxiov[i]; h->msg_iovlen = 1;
            h->msg_name = &from[i]; h->msg_namelen = sizeof(from[i]);
            h->msg_control = rxctl + i * CMSG_BYTES; h->msg_controllen = CMSG_BYTES;
        }
        int n = recvmmsg(r.fd, rx, RX_SLOTS, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                struct pollfd pfd = {r.fd, POLLIN, 0};
                poll(&pfd, 1, 20);
                continue;
            }
            rc = -errno;
            break;
        }
        r.tx_n = 0; r.msg_cap = 0;
        int64_t nmulti = 0;
        for (int i = 0; i < n; i++) {
            int64_t len = rx[i].msg_len, seg = len;
            struct msghdr *h = &rx[i].msg_hdr;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
                if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                    int size;
                    memcpy(&size, CMSG_DATA(c), sizeof(size));
                    seg = size;
                }
            const uint8_t *base = rxbuf + (int64_t)i * bufsize;
            for (int64_t off = 0; off < len; off += seg) {
                st->datagrams++;
                int64_t part = len - off < seg ? len - off : seg;
                on_payload(&r, base + off, part, &from[i], multicast, &nmulti);
            }
        }
        if (nmulti) queue_multicast(&r, multicast, nmulti);
        if (r.msg_cap) {
            int e = send_all(&r);
            /* no GSO here after all: later batches go unsegmented; this one's results are lost
             * like dropped datagrams, and the workers' retries fetch them (rule 8 above) */
            if (e == -2) { r.gso = 0; e = 0; }
            if (e < 0) { rc = e; break; }
        }
    }
out:
    for (int s = 0; s < MAX_SUBS; s++) { free(r.slots[s]); free(r.sums[s]); }
    free(r.tx); free(r.msgs); free(r.iov); free(r.names); free(r.ctl); free(r.workers);
    free(rxbuf); free(rx); free(rxiov); free(from); free(rxctl); free(multicast); free(r.order); free(r.seen);
    return rc;
}
