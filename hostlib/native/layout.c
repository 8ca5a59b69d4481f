/* What the library was compiled with, for the Python side to check when it loads it
 * (hostlib/native/structs.py and library.py): the offset of every field of every struct
 * ctypes mirrors, their sizes, and the value of every constant shared with Python. */
#include <stddef.h>

#include "inahost.h"

#define FIELD(T, f) {#T, #f, offsetof(T, f)}

static const struct {
    const char *type, *field;
    size_t offset;
} fields[] = {
    FIELD(Rto, initial), FIELD(Rto, minimum), FIELD(Rto, maximum), FIELD(Rto, max_backoff), FIELD(Rto, srtt),
    FIELD(Rto, rttvar), FIELD(Rto, has_srtt),

    FIELD(Worker, n), FIELD(Worker, lanes), FIELD(Worker, frame_len), FIELD(Worker, window), FIELD(Worker, reach),
    FIELD(Worker, recovery), FIELD(Worker, nsubs), FIELD(Worker, job), FIELD(Worker, round),
    FIELD(Worker, node_tries), FIELD(Worker, wire), FIELD(Worker, sub), FIELD(Worker, first), FIELD(Worker, count),
    FIELD(Worker, node), FIELD(Worker, pos), FIELD(Worker, done), FIELD(Worker, results), FIELD(Worker, retx),
    FIELD(Worker, first_sent), FIELD(Worker, timeout), FIELD(Worker, deadline), FIELD(Worker, pend),
    FIELD(Worker, later), FIELD(Worker, resent_at), FIELD(Worker, path_srtt), FIELD(Worker, path_rttvar),
    FIELD(Worker, path_clean), FIELD(Worker, base), FIELD(Worker, next), FIELD(Worker, n_done),
    FIELD(Worker, n_pending), FIELD(Worker, n_recovering), FIELD(Worker, newest_answered),
    FIELD(Worker, recovery_answered), FIELD(Worker, rto),
    FIELD(Worker, resend_rtt), FIELD(Worker, retry_rtt), FIELD(Worker, sent), FIELD(Worker, resent),
    FIELD(Worker, fast_resent), FIELD(Worker, results_n), FIELD(Worker, duplicate_results), FIELD(Worker, out_n),
    FIELD(Worker, out_cap), FIELD(Worker, scratch_used), FIELD(Worker, out), FIELD(Worker, scratch),

    FIELD(Job, id), FIELD(Job, nworkers), FIELD(Job, python_only), FIELD(Job, has_newest), FIELD(Job, newest),
    FIELD(Job, mask), FIELD(Job, wid), FIELD(Job, prefix), FIELD(Job, relay_node), FIELD(Job, relay_prefix),

    FIELD(Ps, lanes), FIELD(Ps, frame_len), FIELD(Ps, njobs), FIELD(Ps, ntables), FIELD(Ps, tables_cap),
    FIELD(Ps, seq), FIELD(Ps, jobs), FIELD(Ps, tables), FIELD(Ps, open), FIELD(Ps, rto), FIELD(Ps, counts),
    FIELD(Ps, completed), FIELD(Ps, results_sent), FIELD(Ps, results_relayed), FIELD(Ps, out_n),
    FIELD(Ps, out_cap), FIELD(Ps, out), FIELD(Ps, scratch), FIELD(Ps, spare_chunks), FIELD(Ps, nspare_chunks),
    FIELD(Ps, spare_chunks_cap), FIELD(Ps, spare_slots), FIELD(Ps, spare_slots_cap), FIELD(Ps, query_srtt),
    FIELD(Ps, results_resent),

    FIELD(Io, fd), FIELD(Io, lanes), FIELD(Io, need), FIELD(Io, frame_len), FIELD(Io, cap), FIELD(Io, bufsize),
    FIELD(Io, pos), FIELD(Io, cnt), FIELD(Io, dst_port), FIELD(Io, gso), FIELD(Io, tx_packets),
    FIELD(Io, tx_bytes), FIELD(Io, rx_packets), FIELD(Io, rx_bytes), FIELD(Io, send_dropped), FIELD(Io, rxbuf),
    FIELD(Io, rxmsgs), FIELD(Io, rxiov), FIELD(Io, rxnames), FIELD(Io, txcap), FIELD(Io, txmsgs),
    FIELD(Io, txiov), FIELD(Io, txnames), FIELD(Io, ho_data), FIELD(Io, ho_len), FIELD(Io, ho_source),
    FIELD(Io, seg_off), FIELD(Io, seg_size), FIELD(Io, last_pos), FIELD(Io, last_off), FIELD(Io, rxctl),
    FIELD(Io, txctl), FIELD(Io, txgid), FIELD(Io, txsorted), FIELD(Io, bypass), FIELD(Io, bypass_fill),
    FIELD(Io, bypass_send), FIELD(Io, wake_fd), FIELD(Io, woken),
};

/* Field i of the table: its struct's and its own name and its offset; 0 past the end. */
int ina_field(int64_t i, const char **type, const char **field, int64_t *offset) {
    if (i < 0 || (size_t)i >= sizeof(fields) / sizeof(fields[0])) return 0;
    *type = fields[i].type;
    *field = fields[i].field;
    *offset = (int64_t)fields[i].offset;
    return 1;
}

/* The size of a struct the Python side mirrors, by name; -1 for another name. */
int64_t ina_sizeof(const char *type) {
    if (!strcmp(type, "Rto")) return sizeof(Rto);
    if (!strcmp(type, "Worker")) return sizeof(Worker);
    if (!strcmp(type, "Job")) return sizeof(Job);
    if (!strcmp(type, "Ps")) return sizeof(Ps);
    if (!strcmp(type, "Io")) return sizeof(Io);
    return -1;
}

#define CONSTANT(name) {#name, (double)(name)},

static const struct {
    const char *name;
    double value;
} constants[] = {INA_SHARED_CONSTANTS(CONSTANT)};

/* Constant i as the library was compiled with it (constants.h's list, and the system's
 * SOL_UDP and UDP_GRO): its name and value; 0 past the end. */
int ina_constant(int64_t i, const char **name, double *value) {
    if (i < 0 || (size_t)i >= sizeof(constants) / sizeof(constants[0])) return 0;
    *name = constants[i].name;
    *value = constants[i].value;
    return 1;
}
