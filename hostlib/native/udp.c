/* The UDP loops of the native data path: recvmmsg into a ring (UDP_GRO-coalesced datagrams
 * split on loopback), sendmmsg straight from the cores' output frames (UDP_SEGMENT batches on
 * loopback), and the worker, worker-group and PS loops that run the cores until a frame or a
 * timer needs Python. hostlib/native/udp.py drives them. */
#include "inahost.h"

#define CMSG_BYTES 64

/* gso: batch datagrams to one destination into UDP_SEGMENT sends and read UDP_GRO-coalesced
 * ones (the caller enables UDP_GRO on the socket); only for loopback, where no switch sees the
 * packets: a packet socket on a real interface (p4sim on Mininet's veths) would see a GSO
 * super-packet, not the datagrams. On the wire of lo, each segment is one datagram. */
void ina_io_free(Io *io);

Io *ina_io_new(int64_t fd, int64_t lanes, int64_t cap, int64_t txcap, int64_t dst_port, int64_t gso) {
    Io *io = calloc(1, sizeof(Io));
    if (!io) return NULL;
    io->fd = fd; io->lanes = lanes; io->need = HDR + 4 * lanes; io->frame_len = PREFIX + io->need;
    io->gso = gso ? gso_max_segments() : 0;      /* segments per UDP_SEGMENT send; 0: none */
    /* a coalesced datagram is at most 64 KiB, whatever the segment size */
    io->cap = cap; io->bufsize = (gso ? 65536 : io->need) + 64; io->txcap = txcap;
    io->dst_port = dst_port;
    io->wake_fd = -1;
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

/* a frame's GSO group: its destination and sub-model. A super-packet is steered as a whole by
 * its first datagram (a receiver sharded over threads by sub-model, SO_REUSEPORT with
 * hostlib.drivers.steer_by_submodel, reads it on the socket of that datagram's sub-model), so
 * it holds one sub-model's datagrams only */
static inline uint64_t gso_key(const uint8_t *f) {
    uint32_t d;
    memcpy(&d, f + 30, 4);
    return (uint64_t)is_header_only(f + PREFIX) << 48 | (uint64_t)d << 16 | be16(f + PREFIX + 6);
}

#define GSO_GROUPS 256      /* groups per pass; more (sub-models x destinations): no GSO this pass */
#define GSO_TABLE 512       /* open addressing over the groups' keys */

/* GSO: the frames grouped by destination and sub-model (order kept within each), io->gso per message */
static int send_gso(Io *io, const uint8_t *const *frames, int64_t m) {
    uint64_t key[GSO_GROUPS];
    int64_t cnt[GSO_GROUPS], start[GSO_GROUPS], nd = 0;
    int16_t table[GSO_TABLE];
    memset(table, 0xff, sizeof(table));          /* -1: empty */
    for (int64_t i = 0; i < m; i++) {
        uint64_t k = gso_key(frames[i]);
        uint32_t h = (uint32_t)((k * 0x9E3779B97F4A7C15ULL) >> 55);      /* 9 bits: GSO_TABLE */
        while (table[h] >= 0 && key[table[h]] != k) h = (h + 1) & (GSO_TABLE - 1);
        int64_t g = table[h];
        if (g < 0) {
            if (nd == GSO_GROUPS) return 1;       /* too many groups for one pass: no GSO */
            g = nd++;
            table[h] = (int16_t)g;
            key[g] = k; cnt[g] = 0;
        }
        io->txgid[i] = (int32_t)g;
        cnt[g]++;
    }
    for (int64_t g = 0, acc = 0; g < nd; g++) { start[g] = acc; acc += cnt[g]; }
    for (int64_t i = 0; i < m; i++) io->txsorted[start[io->txgid[i]]++] = frames[i];
    for (int64_t i = 0; i < m; i++) {
        io->txiov[i].iov_base = (void *)(io->txsorted[i] + PREFIX);
        io->txiov[i].iov_len = ina_len(io->txsorted[i] + PREFIX, io->need);
    }
    /* one message per io->gso datagrams of a group (64 KiB at most a send); the groups lie in order,
     * header-only frames in groups of their own (one segment size per message) */
    int64_t nmsgs = 0;
    for (int64_t g = 0, i = 0; g < nd; g++) {
        uint32_t d = (uint32_t)(key[g] >> 16);          /* the destination, as gso_key took it */
        int64_t seg = key[g] >> 48 ? HDR : io->need, most = 65000 / seg < io->gso ? 65000 / seg : io->gso;
        for (int64_t end = i + cnt[g]; i < end;) {
            int64_t j = i + most < end ? i + most : end;
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
                uint16_t size = (uint16_t)seg;
                memcpy(CMSG_DATA(c), &size, sizeof(size));
            } else {
                h->msg_control = NULL; h->msg_controllen = 0;
            }
            nmsgs++;
            i = j;
        }
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
    io->txiov[i].iov_len = ina_len(f + PREFIX, io->need);
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
        for (int64_t i = 0; i < m; i++) io->tx_bytes += PREFIX + ina_len(frames[pos + i] + PREFIX, io->need);
        int r = io->bypass ? io->bypass_send(io->bypass, io, frames + pos, NULL, m)
                : io->gso ? send_gso(io, frames + pos, m) : 1;
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
    if (io->bypass) return io->bypass_fill(io->bypass, io, wait);
    io_reset_msgs(io);
    int r = recvmmsg((int)io->fd, io->rxmsgs, (unsigned)io->cap, MSG_DONTWAIT, NULL);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait > 0) {
        struct pollfd pfd[2] = {{(int)io->fd, POLLIN, 0}, {(int)io->wake_fd, POLLIN, 0}};
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        int p = ppoll(pfd, io->wake_fd >= 0 ? 2 : 1, &ts, NULL);
        if (p < 0 && errno != EINTR) return -errno;
        if (p <= 0) return 0;
        if (io->wake_fd >= 0 && pfd[1].revents & POLLIN) io_woken(io);
        if (!(pfd[0].revents & POLLIN)) return 0;
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
        const uint8_t *d = (const uint8_t *)io->rxiov[i].iov_base + off;
        int header_only = len == HDR && is_header_only(d);     /* a query or an ask */
        if ((len < io->need && !header_only) || (d[0] >> 4) != INA_VERSION) continue;
        io->rx_packets++;
        io->rx_bytes += PREFIX + (header_only ? HDR : io->need);
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
    io->rx_bytes -= PREFIX + (io->ho_len == HDR ? HDR : io->need);
}

/* The C loops' wait, at ``*now`` (s since t0): EV_TIMER when the deadline ``dl`` is due,
 * EV_POLL when ``until`` passed or io->wake_fd woke the wait, -errno on a socket error; else
 * read what arrives by the earlier of the two into the ring, set ``*now`` and return 0 (go on). */
static int io_wait(Io *io, double t0, double dl, double until, double *now) {
    *now = mono() - t0;
    if (dl <= *now) return EV_TIMER;
    if (*now >= until) return EV_POLL;
    int r = io_fill(io, (dl < until ? dl : until) - *now);
    if (r < 0) return r;
    *now = mono() - t0;
    if (io->woken) {                      /* the caller wants its stop condition checked now */
        io->woken = 0;
        return EV_POLL;
    }
    return 0;
}

/* The next INA datagram, waiting up to ``wait`` s for one: 1 (it is io->ho_data), 0 or -errno
 * (for agents the C loops do not run, so that they read coalesced datagrams as the loops do) */
int ina_io_poll(Io *io, double wait) {
    if (io_next(io)) return 1;
    int r = io_fill(io, wait);
    io->woken = 0;                        /* nothing read: the caller checks its stop condition */
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
        if (dl <= now) {                      /* our timers: resend here, then go on */
            ina_worker_timer(w, now);
            continue;
        }
        if (py_deadline < dl) dl = py_deadline;
        int r = io_wait(io, t0, dl, until, &now);
        if (r == EV_TIMER && py_deadline > now) continue;    /* ours fell due while waiting */
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
        int all_done = 1, fired = 0;
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
            if (x <= now) {                   /* its timers: resend here (sent on the next pass) */
                ina_worker_timer(w, now);
                fired = 1;
            } else if (x < dl) {
                dl = x;
            }
        }
        if (fired) continue;
        if (stop_on_done && all_done) return EV_DONE;
        int r = io_wait(io, t0, dl, until, &now);
        if (r == EV_TIMER && py_deadline > now) continue;    /* a worker's fell due while waiting */
        if (r) return r;
    }
}

int ina_ps_udp(Ps *ps, Io *io, double t0, double until, double py_deadline) {
    double now = mono() - t0;
    for (;;) {
        const uint8_t *d;
        while ((d = io_next(io)) != NULL) {
            if (ps->out_n + MAX_WORKERS > ps->out_cap) {    /* room for one completion */
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
