/* AF_XDP for the native data path: an XDP program hands the INA datagrams of an interface
 * (IPv4, UDP, our destination port) to the AF_XDP socket of the receive queue they arrive on,
 * and the C loops of udp.c read and send through their rings instead of a UDP socket
 * (Io.bypass). Everything else on the interface (ARP, other ports) passes to the kernel.
 *
 * This is a library of its own (hostlib/native/xdp.py builds it against Debian's libxdp and
 * libbpf), so the main data path never depends on them. The XDP program is 22 eBPF
 * instructions written here, loaded with libbpf and attached through a BPF link: it goes away
 * with the link's file descriptor, even when the process dies.
 *
 * Sending: each frame is copied into a TX frame of the UMEM with its Ethernet and IPv4/UDP
 * headers rewritten as the kernel would send it from our socket (our MAC, address and port,
 * the peer's MAC, lengths, IPv4 checksum; UDP checksum 0). The peer's MAC is the source MAC of
 * the last INA frame received from its address (for a destination behind a router, the
 * router's); until one arrived, the datagram goes out through the kernel socket bound to our
 * address (``kfd``), which resolves it with ARP. */
#include "inahost.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xdp/xsk.h>

#define FRAME_SIZE 2048
#define TX_FRAMES 4096                    /* TX frames, and descriptors of the TX and completion rings */
#define HELD_MAX 2048                     /* RX frames one fill of the Io's ring may hold */
#define MAX_QUEUES 64
#define NEIGHBOURS 256
#define ETH_IP_UDP 42

/* the modes ina_xsk_open was asked for and got */
#define MODE_AUTO 0
#define MODE_NATIVE 1                     /* XDP in the driver; zero-copy where it supports it */
#define MODE_GENERIC 2                    /* XDP on the kernel's skb path: any interface */

/* One AF_XDP socket per receive queue of the interface, all on one UMEM: the TX frames first,
 * then each queue's RX frames. Queue 0's socket also sends. */
typedef struct {
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp, rx;
    int fd;
} Queue;

typedef struct {
    struct xsk_umem *umem;
    Queue q[MAX_QUEUES];
    int64_t nq, next_q, rx_frames;        /* rx_frames: per queue; its fill and RX rings hold as many */
    uint8_t *area;
    size_t area_size;
    int fd, map_fd, prog_fd, link_fd, kfd;  /* fd: queue 0's, which sends */
    int64_t mode, zerocopy;
    uint8_t mac[6], ip[4];
    uint16_t port;
    uint64_t *free_tx;                    /* TX frames not in flight */
    int64_t nfree_tx;
    uint64_t *held;                       /* RX frames the Io's ring still points into */
    int64_t nheld;
    uint32_t nb_ip[NEIGHBOURS];
    uint8_t nb_mac[NEIGHBOURS][6];
    int64_t nb_n;
    int64_t tx_kernel, rx_kernel, kicks;
} Xsk;

/* ------------------------------------------------------------------ the XDP program */
static int load_program(uint16_t port, int map_fd) {
    /* r1 = ctx; packet [r2, r3); INA: IPv4 without options, UDP, destination port ``port``:
     * bpf_redirect_map(xsks, rx_queue_index, XDP_PASS); anything else: XDP_PASS */
    struct bpf_insn p[] = {
        {BPF_LDX | BPF_MEM | BPF_W, 2, 1, offsetof(struct xdp_md, data), 0},
        {BPF_LDX | BPF_MEM | BPF_W, 3, 1, offsetof(struct xdp_md, data_end), 0},
        {BPF_ALU64 | BPF_MOV | BPF_X, 4, 2, 0, 0},
        {BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, ETH_IP_UDP},
        {BPF_JMP | BPF_JGT | BPF_X, 4, 3, 10, 0},                       /* too short: pass */
        {BPF_LDX | BPF_MEM | BPF_H, 5, 2, 12, 0},
        {BPF_JMP | BPF_JNE | BPF_K, 5, 0, 8, htons(0x0800)},           /* EtherType IPv4 */
        {BPF_LDX | BPF_MEM | BPF_B, 5, 2, 14, 0},
        {BPF_JMP | BPF_JNE | BPF_K, 5, 0, 6, 0x45},                    /* version 4, no options */
        {BPF_LDX | BPF_MEM | BPF_B, 5, 2, 23, 0},
        {BPF_JMP | BPF_JNE | BPF_K, 5, 0, 4, IPPROTO_UDP},
        {BPF_LDX | BPF_MEM | BPF_H, 5, 2, 36, 0},
        {BPF_JMP | BPF_JNE | BPF_K, 5, 0, 2, htons(port)},
        {BPF_LDX | BPF_MEM | BPF_W, 2, 1, offsetof(struct xdp_md, rx_queue_index), 0},
        {BPF_JMP | BPF_JA, 0, 0, 2, 0},
        {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_PASS},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
        {BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, map_fd},  /* r1 = the XSKMAP */
        {0, 0, 0, 0, 0},
        {BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, XDP_PASS},
        {BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect_map},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    return bpf_prog_load(BPF_PROG_TYPE_XDP, "ina_xsk", "GPL", p, sizeof(p) / sizeof(p[0]), NULL);
}

/* ------------------------------------------------------------------ setup */
void ina_xsk_close(Xsk *x);

/* queue ``i``'s socket (queue 0: the first on the UMEM, in copy or zero-copy mode; the others
 * share the UMEM, in the mode of the first) */
static int open_queue(Xsk *x, const char *ifname, int64_t i, int64_t zerocopy) {
    Queue *q = &x->q[i];
    struct xsk_socket_config cfg = {
        .rx_size = (uint32_t)x->rx_frames, .tx_size = i ? 0 : TX_FRAMES,
        .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
        .bind_flags = zerocopy ? XDP_ZEROCOPY : XDP_COPY,
    };
    return xsk_socket__create_shared(&q->xsk, ifname, (uint32_t)i, x->umem, &q->rx, i ? NULL : &q->tx, &q->fill,
                                     &q->comp, &cfg);
}

/* the interface's receive queues (1 where the driver does not say) */
static int64_t rx_queues(int fd, const char *ifname) {
    struct ethtool_channels ch = {.cmd = ETHTOOL_GCHANNELS};
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
    ifr.ifr_data = (void *)&ch;
    if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) return 1;
    int64_t n = ch.rx_count > ch.combined_count ? ch.rx_count : ch.combined_count;
    return n < 1 ? 1 : n > MAX_QUEUES ? MAX_QUEUES : n;
}

/* Open every receive queue of ``ifname`` (``queues`` of them where > 0) for the INA datagrams to
 * ``port``; ``ip``/``mac``: the interface's; ``kfd``: the UDP socket bound to (ip, port);
 * ``mode``: MODE_*. NULL with ``*err`` = errno (and ``*stage``: what failed) where it cannot. */
Xsk *ina_xsk_open(const char *ifname, int64_t queues, const uint8_t *ip, const uint8_t *mac, int64_t port,
                  int64_t kfd, int64_t mode, int64_t *err, int64_t *stage) {
    Xsk *x = calloc(1, sizeof(Xsk));
    if (!x) { *err = ENOMEM; *stage = 0; return NULL; }
    x->map_fd = x->prog_fd = x->link_fd = -1;
    x->kfd = (int)kfd;
    x->port = (uint16_t)port;
    memcpy(x->ip, ip, 4);
    memcpy(x->mac, mac, 6);
    int r = 0;
    int ifindex = (int)if_nametoindex(ifname);
    *stage = 1;
    if (!ifindex) { r = -errno; goto fail; }
    x->nq = queues > 0 ? (queues > MAX_QUEUES ? MAX_QUEUES : queues) : rx_queues((int)kfd, ifname);
    x->free_tx = malloc(TX_FRAMES * sizeof(uint64_t));
    /* 4 MiB of RX frames a queue, less where there are many (64 queues: 64 MiB in all) */
    x->rx_frames = x->nq <= 4 ? 2048 : x->nq <= 16 ? 1024 : 512;
    x->held = malloc(HELD_MAX * sizeof(uint64_t));
    x->area_size = (size_t)(TX_FRAMES + x->nq * x->rx_frames) * FRAME_SIZE;
    x->area = mmap(NULL, x->area_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *stage = 2;
    if (!x->free_tx || !x->held || x->area == MAP_FAILED) { x->area = x->area == MAP_FAILED ? NULL : x->area; r = -ENOMEM; goto fail; }
    struct xsk_umem_config ucfg = {(uint32_t)x->rx_frames, TX_FRAMES, FRAME_SIZE, 0, 0};
    *stage = 3;
    if ((r = xsk_umem__create(&x->umem, x->area, x->area_size, &x->q[0].fill, &x->q[0].comp, &ucfg))) goto fail;
    *stage = 4;
    x->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "ina_xsks", 4, 4, MAX_QUEUES, NULL);
    if (x->map_fd < 0) { r = x->map_fd; goto fail; }
    *stage = 5;
    x->prog_fd = load_program(x->port, x->map_fd);
    if (x->prog_fd < 0) { r = x->prog_fd; goto fail; }
    *stage = 6;
    r = -EINVAL;
    for (int64_t m = mode == MODE_GENERIC ? MODE_GENERIC : MODE_NATIVE; m <= MODE_GENERIC; m++) {
        if (mode != MODE_AUTO && m != mode) continue;
        LIBBPF_OPTS(bpf_link_create_opts, lopts, .flags = m == MODE_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
        /* EBUSY: a program still attached, maybe one of ours whose link was just closed (the
         * kernel may detach it a moment later); give that moment */
        for (int t = 0; (x->link_fd = bpf_link_create(x->prog_fd, ifindex, BPF_XDP, &lopts)) == -EBUSY && t < 100; t++)
            usleep(2000);
        if (x->link_fd < 0) { r = x->link_fd; continue; }
        /* zero-copy needs the driver's support; copy mode works everywhere */
        r = m == MODE_NATIVE && open_queue(x, ifname, 0, 1) == 0 ? 0 : open_queue(x, ifname, 0, 0);
        if (r == 0) { x->mode = m; break; }
        close(x->link_fd);
        x->link_fd = -1;
    }
    if (r) goto fail;
    *stage = 7;
    for (int64_t i = 1; i < x->nq; i++)
        if ((r = open_queue(x, ifname, i, 0))) goto fail;
    *stage = 8;
    for (int64_t i = 0; i < x->nq; i++) {
        if ((r = xsk_socket__update_xskmap(x->q[i].xsk, x->map_fd))) goto fail;
        x->q[i].fd = xsk_socket__fd(x->q[i].xsk);
    }
    x->fd = x->q[0].fd;
    struct xdp_options opts = {0};
    socklen_t optlen = sizeof(opts);
    if (getsockopt(x->fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen) == 0) x->zerocopy = !!(opts.flags & XDP_OPTIONS_ZEROCOPY);
    {
        /* copy mode sends at most this many frames a kick (32 by default, where settable) */
        int budget = TX_FRAMES;
        setsockopt(x->fd, SOL_XDP, 9 /* XDP_MAX_TX_SKB_BUDGET */, &budget, sizeof(budget));
    }
    /* each queue's RX frames to its fill ring; the TX frames free */
    *stage = 9;
    for (int64_t i = 0; i < x->nq; i++) {
        uint32_t idx;
        uint32_t n = (uint32_t)x->rx_frames;
        if (xsk_ring_prod__reserve(&x->q[i].fill, n, &idx) != n) { r = -ENOMEM; goto fail; }
        for (uint32_t f = 0; f < n; f++)
            *xsk_ring_prod__fill_addr(&x->q[i].fill, idx + f) = (uint64_t)(TX_FRAMES + i * n + f) * FRAME_SIZE;
        xsk_ring_prod__submit(&x->q[i].fill, n);
    }
    for (int64_t i = 0; i < TX_FRAMES; i++) x->free_tx[i] = (uint64_t)i * FRAME_SIZE;
    x->nfree_tx = TX_FRAMES;
    return x;
fail:
    *err = -r;
    ina_xsk_close(x);
    return NULL;
}

void ina_xsk_close(Xsk *x) {
    if (!x) return;
    for (int64_t i = MAX_QUEUES - 1; i >= 0; i--)
        if (x->q[i].xsk) xsk_socket__delete(x->q[i].xsk);
    if (x->umem) xsk_umem__delete(x->umem);
    if (x->link_fd >= 0) close(x->link_fd);
    if (x->prog_fd >= 0) close(x->prog_fd);
    if (x->map_fd >= 0) close(x->map_fd);
    if (x->area) munmap(x->area, x->area_size);
    free(x->free_tx);
    free(x->held);
    free(x);
}

/* what the sockets got: mode, zero-copy, datagrams sent through the kernel socket (no MAC yet),
 * TX kicks, datagrams read from the kernel socket, queues */
void ina_xsk_info(const Xsk *x, int64_t *out) {
    out[0] = x->mode; out[1] = x->zerocopy; out[2] = x->tx_kernel; out[3] = x->kicks; out[4] = x->rx_kernel;
    out[5] = x->nq;
}

/* ------------------------------------------------------------------ neighbours */
static const uint8_t *neighbour(const Xsk *x, uint32_t ip) {
    for (int64_t i = 0; i < x->nb_n; i++)
        if (x->nb_ip[i] == ip) return x->nb_mac[i];
    return NULL;
}

static void learn(Xsk *x, uint32_t ip, const uint8_t *mac) {
    for (int64_t i = 0; i < x->nb_n; i++)
        if (x->nb_ip[i] == ip) { memcpy(x->nb_mac[i], mac, 6); return; }
    if (x->nb_n < NEIGHBOURS) {
        x->nb_ip[x->nb_n] = ip;
        memcpy(x->nb_mac[x->nb_n++], mac, 6);
    }
}

/* ------------------------------------------------------------------ receiving */
static inline int64_t queue_of(const Xsk *x, uint64_t addr) {
    return (int64_t)(addr / FRAME_SIZE - TX_FRAMES) / x->rx_frames;
}

/* the RX frames the Io's ring held, back to their queues' fill rings (each ring holds all of its
 * queue's frames, so there is always room for those taken out). take_rx holds them queue by
 * queue, so they lie in runs of one queue: one pass */
static void recycle_rx(Xsk *x) {
    for (int64_t i = 0; i < x->nheld;) {
        int64_t q = queue_of(x, x->held[i]), end = i + 1;
        while (end < x->nheld && queue_of(x, x->held[end]) == q) end++;
        uint32_t n = (uint32_t)(end - i), idx;
        xsk_ring_prod__reserve(&x->q[q].fill, n, &idx);
        for (; i < end; i++) *xsk_ring_prod__fill_addr(&x->q[q].fill, idx++) = x->held[i];
        xsk_ring_prod__submit(&x->q[q].fill, n);
    }
    x->nheld = 0;
}

/* What reached the kernel socket instead: datagrams of a queue no socket serves (one added after
 * the sockets opened, or past MAX_QUEUES) or from the host itself. Read into the Io's ring slots [first, first + most), as udp.c's own
 * reading would: how many, or -errno. */
static int kernel_recv(Xsk *x, Io *io, uint32_t first, uint32_t most) {
    for (uint32_t i = first; i < first + most; i++) {
        io->rxiov[i].iov_base = io->rxbuf + i * io->bufsize;
        io->rxiov[i].iov_len = io->bufsize;
        io->rxmsgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
        io->rxmsgs[i].msg_hdr.msg_controllen = 0;
    }
    int r = recvmmsg(x->kfd, io->rxmsgs + first, most, MSG_DONTWAIT, NULL);
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
    x->rx_kernel += r;
    return r;
}

/* what the queues' RX rings hold, from queue ``x->next_q`` on, into the Io's ring slots
 * [first, first + room): how many */
static uint32_t take_rx(Xsk *x, Io *io, uint32_t first, uint32_t room) {
    uint32_t got = 0;
    for (int64_t k = 0; k < x->nq && got < room; k++) {
        Queue *q = &x->q[(x->next_q + k) % x->nq];
        uint32_t idx, n = xsk_ring_cons__peek(&q->rx, room - got, &idx);
        for (uint32_t j = 0; j < n; j++) {
            uint32_t i = first + got + j;
            const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + j);
            uint8_t *p = xsk_umem__get_data(x->area, xsk_umem__add_offset_to_addr(d->addr));
            x->held[x->nheld++] = xsk_umem__extract_addr(d->addr);
            int64_t len = 0;
            /* the program let through IPv4 without options to our port only; the lengths are
             * the datagram's (a frame may carry Ethernet padding) */
            if (d->len >= ETH_IP_UDP) {
                int64_t udp = be16(p + 38) - 8;
                len = udp >= 0 && udp <= (int64_t)d->len - ETH_IP_UDP ? udp : 0;
                uint32_t src;
                memcpy(&src, p + 26, 4);
                if (len) learn(x, src, p + 6);
                memcpy(&io->rxnames[i].sin_port, p + 34, 2);
                memcpy(&io->rxnames[i].sin_addr, p + 26, 4);
            }
            io->rxiov[i].iov_base = p + ETH_IP_UDP;
            io->rxmsgs[i].msg_len = (unsigned)len;
            io->rxmsgs[i].msg_hdr.msg_controllen = 0;
        }
        xsk_ring_cons__release(&q->rx, n);
        got += n;
    }
    x->next_q = (x->next_q + 1) % x->nq;       /* no queue starves the others */
    return got;
}

/* Io.bypass_fill: give the frames the ring held back, then read what is there into the Io's
 * ring (waiting up to ``wait`` s for something). How many were read, or -errno. */
int ina_xsk_fill(void *bypass, void *io_, double wait) {
    Xsk *x = bypass;
    Io *io = io_;
    recycle_rx(x);
    uint32_t cap = io->cap < HELD_MAX ? (uint32_t)io->cap : HELD_MAX;
    uint32_t n = take_rx(x, io, 0, cap);
    int k = n < cap ? kernel_recv(x, io, n, cap - n) : 0;
    if (k < 0) return k;
    if (!n && !k && wait > 0) {
        struct pollfd pfd[MAX_QUEUES + 2];
        for (int64_t i = 0; i < x->nq; i++) pfd[i] = (struct pollfd){x->q[i].fd, POLLIN, 0};
        pfd[x->nq] = (struct pollfd){x->kfd, POLLIN, 0};
        pfd[x->nq + 1] = (struct pollfd){(int)io->wake_fd, POLLIN, 0};      /* Io.wake_fd, as udp.c's */
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        int p = ppoll(pfd, (nfds_t)(x->nq + 1 + (io->wake_fd >= 0)), &ts, NULL);
        if (p < 0 && errno != EINTR) return -errno;
        if (p > 0 && io->wake_fd >= 0 && pfd[x->nq + 1].revents & POLLIN) io_woken(io);
        n = take_rx(x, io, 0, cap);
        k = n < cap ? kernel_recv(x, io, n, cap - n) : 0;
        if (k < 0) return k;
    }
    io->pos = 0;
    io->cnt = n + k;
    io->seg_off = 0;
    return (int)(n + k);
}

/* ------------------------------------------------------------------ sending */
static void reap(Xsk *x) {
    uint32_t idx;
    uint32_t n = xsk_ring_cons__peek(&x->q[0].comp, TX_FRAMES, &idx);
    for (uint32_t i = 0; i < n; i++) x->free_tx[x->nfree_tx++] = *xsk_ring_cons__comp_addr(&x->q[0].comp, idx + i);
    xsk_ring_cons__release(&x->q[0].comp, n);
}

/* copy mode sends in the kick's system call, a budget of frames at a time: EAGAIN after the
 * kernel took descriptors means more than one budget was queued (kick again at once); without
 * progress the device is busy (wait a moment, up to 50 times; what is left goes with the next
 * kick) */
static int kick(Xsk *x) {
    uint32_t taken = __atomic_load_n(x->q[0].tx.consumer, __ATOMIC_ACQUIRE);
    for (int waits = 0;;) {
        x->kicks++;
        if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) return -errno;
        uint32_t now = __atomic_load_n(x->q[0].tx.consumer, __ATOMIC_ACQUIRE);
        if (now != taken) { taken = now; continue; }
        if (++waits > 50) return 0;
        struct pollfd pfd = {x->fd, POLLOUT, 0};
        poll(&pfd, 1, 1);
    }
}

/* the datagram of ``f`` through the kernel socket: no MAC known for its destination yet */
static void kernel_send(Xsk *x, Io *io, const uint8_t *f, int64_t len) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)io->dst_port)};
    memcpy(&a.sin_addr, f + 30, 4);
    if (sendto(x->kfd, f + PREFIX, (size_t)(len - PREFIX), MSG_DONTWAIT, (struct sockaddr *)&a, sizeof(a)) < 0)
        io->send_dropped++;
    x->tx_kernel++;
}

static void write_headers(const Xsk *x, const Io *io, uint8_t *p, const uint8_t *mac, int64_t len) {
    memcpy(p, mac, 6);
    memcpy(p + 6, x->mac, 6);
    p[12] = 0x08; p[13] = 0x00;
    uint16_t ip_len = htons((uint16_t)(len - 14)), udp_len = htons((uint16_t)(len - 34));
    uint16_t sport = htons(x->port), dport = htons((uint16_t)io->dst_port);
    p[14] = 0x45; p[15] = 0;
    memcpy(p + 16, &ip_len, 2);
    p[18] = p[19] = 0; p[20] = 0x40; p[21] = 0;           /* id 0, don't fragment */
    if (!p[22]) p[22] = 64;
    p[23] = IPPROTO_UDP;
    memcpy(p + 26, x->ip, 4);
    ipv4_checksum(p);
    memcpy(p + 34, &sport, 2);
    memcpy(p + 36, &dport, 2);
    memcpy(p + 38, &udp_len, 2);
    p[40] = p[41] = 0;
}

/* Io.bypass_send: ``n`` whole frames (``lens``: their lengths; NULL: each its INA datagram's, ina_len) to the
 * IPv4 destination in each, UDP port io->dst_port. No TX frame free within 50 ms: the datagram
 * is lost like a network drop (io->send_dropped), as with a full socket buffer. 0, or -errno. */
int ina_xsk_send(void *bypass, void *io_, const uint8_t *const *frames, const int64_t *lens, int64_t n) {
    Xsk *x = bypass;
    Io *io = io_;
    int64_t i = 0;
    while (i < n) {
        reap(x);
        if (!x->nfree_tx) {
            int r = kick(x);
            if (r) return r;
            reap(x);
            for (int t = 0; !x->nfree_tx && t < 50; t++) {
                struct pollfd pfd = {x->fd, POLLOUT, 0};
                poll(&pfd, 1, 1);
                reap(x);
            }
            if (!x->nfree_tx) { io->send_dropped++; i++; continue; }
        }
        uint32_t want = (uint32_t)(n - i < x->nfree_tx ? n - i : x->nfree_tx), idx;
        uint32_t got = xsk_ring_prod__reserve(&x->q[0].tx, want, &idx);
        if (!got) { int r = kick(x); if (r) return r; continue; }
        uint32_t used = 0;
        for (; used < got && i < n; i++) {
            const uint8_t *f = frames[i];
            int64_t len = lens ? lens[i] : PREFIX + ina_len(f + PREFIX, io->need);
            if (len < PREFIX || len > FRAME_SIZE) { io->send_dropped++; continue; }
            uint32_t dst;
            memcpy(&dst, f + 30, 4);
            const uint8_t *mac = neighbour(x, dst);
            if (!mac) { kernel_send(x, io, f, len); continue; }
            uint64_t addr = x->free_tx[--x->nfree_tx];
            uint8_t *p = xsk_umem__get_data(x->area, addr);
            memcpy(p, f, (size_t)len);
            write_headers(x, io, p, mac, len);
            struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->q[0].tx, idx + used++);
            d->addr = addr;
            d->len = (uint32_t)len;
        }
        /* reserved but not used (kernel-sent or dropped frames): filled with none */
        x->q[0].tx.cached_prod -= got - used;
        xsk_ring_prod__submit(&x->q[0].tx, used);
        if (used) {
            int r = kick(x);
            if (r) return r;
        }
    }
    return 0;
}
