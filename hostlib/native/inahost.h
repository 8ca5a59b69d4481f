/* The native host data path of hostlib: what its C files share (hostlib/native/library.py
 * compiles encode.c, worker.c, ps.c, udp.c and layout.c together and loads them with ctypes).
 *
 * Fast paths of the sans-IO cores hostlib.worker.Worker and hostlib.ps.ParameterServer, and the
 * UDP loops that run them with recvmmsg/sendmmsg. They own the common case only: a worker's
 * first copies, the results of its current round, fast retransmits and its timers; the PS's
 * network contributions, the results it multicasts and the RESENDs of fragments it completed.
 * Everything else (queries, reminders to answer, RESENDs of open fragments, result copies, the
 * PS's timeouts, frames of other rounds, overflow) is handed back to the Python cores, which
 * stay the reference: the Python wrapper syncs the state both ways around every hand-off, so
 * there is one protocol logic and these functions mirror it line by line.
 *
 * Frames are Ethernet/IPv4/UDP/INA as hostlib builds them (PREFIX bytes of headers, then the
 * INA header and K big-endian int32 lanes); on UDP only the INA part travels.
 *
 * Every constant shared with Python (frame layout, flags, the cores' return codes and the UDP
 * loops' events, the PS's counter kinds, the worker's tuning) comes from constants.h, which
 * the build generates from the Python modules that define them (hostlib/native/constants.py):
 * none is written here. The structs below are mirrored by ctypes (hostlib/native/structs.py),
 * which checks every field's offset against layout.c's table when it loads the library.
 */
#ifndef INAHOST_H
#define INAHOST_H

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
#include <unistd.h>

#include "constants.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

/* Segments one UDP_SEGMENT send may carry: UDP_MAX_SEGMENTS, 128 on recent kernels and 64 on
 * older ones (a larger send fails with EINVAL). Probed once per library by a 128-segment send of
 * one-byte segments from a loopback socket to itself. Twice the segments per send halves the
 * kernel's per-send work: a sender of 288-byte datagrams used 2.5x less system time with 128. */
#define GSO_SEGMENTS_MAX 128
#define GSO_SEGMENTS_MIN 64
static inline int64_t gso_max_segments(void) {
    static int64_t probed;
    if (probed) return probed;
    int64_t best = GSO_SEGMENTS_MIN;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof(a);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0
        && getsockname(fd, (struct sockaddr *)&a, &alen) == 0) {
        uint8_t payload[GSO_SEGMENTS_MAX] = {0};
        union { char buf[CMSG_SPACE(sizeof(uint16_t))]; struct cmsghdr align; } ctl;
        struct iovec iov = {payload, sizeof(payload)};
        struct msghdr h = {.msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &iov, .msg_iovlen = 1,
                           .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&h);
        uint16_t one = 1;
        c->cmsg_level = SOL_UDP; c->cmsg_type = UDP_SEGMENT; c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        memcpy(CMSG_DATA(c), &one, sizeof(one));
        if (sendmsg(fd, &h, MSG_DONTWAIT) == (ssize_t)sizeof(payload)) best = GSO_SEGMENTS_MAX;
    }
    if (fd >= 0) close(fd);
    probed = best;
    return best;
}

static inline uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static inline uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static inline void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }

#ifdef __SSE2__
#include <emmintrin.h>

/* four 32-bit words byte-swapped (big-endian <-> host) with shifts: SSE2, x86-64's baseline,
 * has no byte shuffle */
static inline __m128i bswap32x4(__m128i y) {
    __m128i lo = _mm_or_si128(_mm_srli_epi32(y, 24), _mm_and_si128(_mm_srli_epi32(y, 8), _mm_set1_epi32(0xff00)));
    __m128i hi = _mm_or_si128(_mm_slli_epi32(y, 24), _mm_and_si128(_mm_slli_epi32(y, 8), _mm_set1_epi32(0xff0000)));
    return _mm_or_si128(lo, hi);
}
#endif

/* acc[i] += the i-th big-endian int32 lane of ln, for i < lanes */
static inline void add_lanes(int64_t *acc, const uint8_t *ln, int64_t lanes) {
    int64_t i = 0;
#ifdef __SSE2__
    for (; i + 4 <= lanes; i += 4) {
        __m128i x = bswap32x4(_mm_loadu_si128((const __m128i *)(ln + 4 * i)));
        __m128i sign = _mm_srai_epi32(x, 31);
        __m128i *a = (__m128i *)(acc + i);
        _mm_storeu_si128(a, _mm_add_epi64(_mm_loadu_si128(a), _mm_unpacklo_epi32(x, sign)));
        _mm_storeu_si128(a + 1, _mm_add_epi64(_mm_loadu_si128(a + 1), _mm_unpackhi_epi32(x, sign)));
    }
#endif
    for (; i < lanes; i++) acc[i] += (int32_t)be32(ln + 4 * i);
}

/* ------------------------------------------------------------------ RTO (hostlib.rto) */
typedef struct {
    double initial, minimum, maximum, max_backoff, srtt, rttvar;
    int64_t has_srtt;
} Rto;

static inline double rto_value(const Rto *r) {
    if (!r->has_srtt) return r->initial > r->minimum ? r->initial : r->minimum;
    double v = r->srtt + 4.0 * r->rttvar;
    if (v < r->minimum) v = r->minimum;
    return v < r->maximum ? v : r->maximum;
}

/* rto.smoothed: RFC 6298's update of (srtt, rttvar) with one sample (first: no srtt yet) */
static inline void smoothed(int first, double *srtt, double *rttvar, double rtt) {
    if (first) { *srtt = rtt; *rttvar = rtt / 2.0; return; }
    *rttvar = 0.75 * *rttvar + 0.25 * fabs(*srtt - rtt);
    *srtt = 0.875 * *srtt + 0.125 * rtt;
}

static inline void rto_sample(Rto *r, double rtt) {
    smoothed(!r->has_srtt, &r->srtt, &r->rttvar, rtt);
    r->has_srtt = 1;
}

/* hostlib.protocol.is_query: the PS's query to a worker (REMINDER, node 0, not a drain) */
static inline int is_query(const uint8_t *p) {
    return (p[1] & F_REMINDER) && !(p[1] & F_PREEMPTED) && be16(p + 4) == 0;
}

/* hostlib.protocol.is_ask: a worker's ask (RESEND without RESULT, count 0) */
static inline int is_ask(const uint8_t *p) { return (p[1] & (F_RESEND | F_RESULT)) == F_RESEND && p[14] == 0; }

/* hostlib.protocol.is_header_only: the two INA frames sent without lanes; an INA payload's
 * length, ``need`` for every other */
static inline int is_header_only(const uint8_t *p) { return is_query(p) || is_ask(p); }
static inline int64_t ina_len(const uint8_t *p, int64_t need) { return is_header_only(p) ? HDR : need; }

/* an option-less IPv4 header's checksum (frame f, Ethernet first), computed afresh */
static inline void ipv4_checksum(uint8_t *f) {
    uint32_t sum = 0;
    f[24] = f[25] = 0;
    for (int i = 14; i < 34; i += 2) sum += (uint32_t)f[i] << 8 | f[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    f[24] = (uint8_t)(~sum >> 8); f[25] = (uint8_t)~sum;
}

/* a whole frame (sans-IO): hostlib's option-less layout (its lanes, or a header-only frame's
 * header), else the Python core's */
static inline int fast_layout(const uint8_t *f, int64_t len, int64_t lanes) {
    return (len >= PREFIX + HDR + 4 * lanes || (len == PREFIX + HDR && is_header_only(f + PREFIX)))
           && f[12] == 8 && f[13] == 0 && f[14] == 0x45 && f[23] == 17
           && be16(f + 36) == INA_UDP_PORT && (f[PREFIX] >> 4) == INA_VERSION;
}

/* ------------------------------------------------------------------ worker (worker.c) */
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
    double recovery_answered;   /* when a retransmitted fragment last got its result (-1: never) */
    Rto rto, resend_rtt, retry_rtt;   /* Worker.rto, .resend_rtt, .retry_rtt */
    int64_t sent, resent, fast_resent, results_n, duplicate_results;
    /* output: frame pointers (into wire or scratch) */
    int64_t out_n, out_cap, scratch_used;
    const uint8_t **out;
    uint8_t *scratch;
} Worker;

int ina_worker_payload(Worker *w, const uint8_t *p, double now);
void ina_worker_timer(Worker *w, double now);
double ina_worker_next_deadline(const Worker *w);

/* ------------------------------------------------------------------ PS (ps.c) */
typedef struct Entry {
    uint64_t key;                   /* sub << 32 | fragment */
    int64_t seq;                    /* creation order across C and Python entries */
    double created, deadline, timeout, completed;    /* completed: when its result went out, -1 before */
    uint32_t bitmap;
    uint8_t state, overflow;        /* state: E_OPEN, E_DONE or E_PY (the Python core's) */
    int16_t relay_state;            /* hostlib.ps.Entry.relay_state */
    struct Entry *prev, *nxt;       /* the open list, in creation order */
    int64_t acc[];
} Entry;

typedef struct {
    uint64_t key;
    Entry *e;
} Slot;

typedef struct {
    int64_t job, round, cap, count;
    Slot *slots;                    /* open addressing; the key inline, so a probe is one load */
    uint8_t **chunks;
    int64_t nchunks, chunks_cap, used;      /* used: entries taken from the last chunk */
} Table;

typedef struct {
    int64_t id, nworkers, python_only, has_newest, newest;
    uint32_t mask;
    int32_t wid[MAX_WORKERS];
    uint8_t prefix[MAX_WORKERS][PREFIX];    /* PS -> worker addressing, as hostlib builds it */
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
    /* what pruned rounds leave for the next ones: entry chunks and slot arrays (a round of a
     * large model takes megabytes; fresh pages would cost a fault each, every round) */
    uint8_t **spare_chunks;
    int64_t nspare_chunks, spare_chunks_cap;
    Slot *spare_slots;
    int64_t spare_slots_cap;
    double query_srtt;              /* ParameterServer.query_rtt's smoothed RTT (-1: no sample yet) */
    int64_t results_resent;
} Ps;

int ina_ps_payload(Ps *ps, const uint8_t *p, double now);
double ina_ps_next_deadline(const Ps *ps);

/* ------------------------------------------------------------------ UDP (udp.c) */
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
    /* kernel bypass (hostlib/native/xdp.c, a library of its own): where set, the ring is
     * filled and frames are sent through these instead of the socket; a filled slot i is
     * rxiov[i] (the INA payload), rxmsgs[i].msg_len and rxnames[i] (its source), as recvmmsg
     * leaves them */
    void *bypass;
    int (*bypass_fill)(void *bypass, void *io, double wait);
    int (*bypass_send)(void *bypass, void *io, const uint8_t *const *frames, const int64_t *lens, int64_t n);
    /* a descriptor (an eventfd; -1: none) whose readiness ends a wait of the loops at once, so
     * that their caller checks its stop condition now rather than at its next poll; woken: it did */
    int64_t wake_fd, woken;
} Io;

/* Io.wake_fd was readable: empty it and note that the wait was woken */
static inline void io_woken(Io *io) {
    uint64_t count;
    if (read((int)io->wake_fd, &count, sizeof(count)) < 0) { /* drained by another reader */ }
    io->woken = 1;
}

#endif
