/* The MPI plugin (libfastrl-mpi.so.0): the collectives of the distributed modes over
 * point-to-point messages, so that a collective can give up after a timeout and say
 * which ranks never answered (OpenMPI 4.1 has no fault-tolerant MPI: a blocking
 * collective with a dead or stopped peer waits forever). See core/dist_api.h. */
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/c_numeric.h"
#include "core/dist_api.h"

#define FRL_EXPORT __attribute__((visibility("default")))

struct frl_mpi_comm {
    MPI_Comm comm;
    MPI_Comm notice_comm;  /* preemption notices, apart from the all-gathers' messages */
    MPI_Request *notice_req; /* [2 x size]: receives from, then sends to, each peer */
    int32_t notices;       /* peers' notices counted this round */
    char *notice_in;       /* [size]: one byte from each peer (receive buffers may not overlap) */
    char notice_out[1];
    int32_t rank, size;
    double timeout;
    int abort_on_fault;
    int faulted;
    char fault[512];
    int tag;               /* each allgather its own tag, so late messages cannot mix */
    MPI_Request *req;      /* [2 x size] */
    MPI_Status *status;    /* [2 x size]: req's, for the sizes that arrived */
};

static int initialised_here;
static int any_fault;

static void say(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    frl_vsnprintf_c(why, size, fmt, ap); /* "0.5 s", not "0,5 s" in a German host */
    va_end(ap);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* MPI initialised here is finalised at exit; after a fault MPI_Finalize would wait for
 * the missing rank, so it is left to the job's end (mpirun ends the other ranks). */
__attribute__((destructor)) static void finalise_at_exit(void)
{
    int fin = 0, init = 0;
    if (!initialised_here || any_fault)
        return;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin)
        MPI_Finalize();
}

static const char *mpi_version(void)
{
    static char text[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    int len = 0;
    MPI_Get_library_version(text, &len);
    text[strcspn(text, "\n")] = '\0';
    return text;
}

static int ensure_init(int64_t fcomm, char *why, size_t size)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin) {
        say(why, size, "MPI was finalised already in this process");
        return 1;
    }
    if (init) {
        int level = MPI_THREAD_SINGLE;
        MPI_Query_thread(&level);
        if (level < MPI_THREAD_FUNNELED) {
            say(why, size, "the host initialised MPI with MPI_THREAD_SINGLE; the library calls "
                "MPI from the thread that trains: initialise it with MPI_Init_thread and at "
                "least MPI_THREAD_FUNNELED (then train from that thread) or SERIALIZED");
            return 1;
        }
        return 0;
    }
    if (fcomm != -1) {
        say(why, size, "dist.comm=%lld names a communicator, but MPI is not initialised "
            "(initialise it first, or leave dist.comm at -1)", (long long)fcomm);
        return 1;
    }
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        say(why, size, "MPI_Init_thread failed");
        return 1;
    }
    initialised_here = 1;
    if (provided < MPI_THREAD_SERIALIZED) {
        say(why, size, "this MPI gives thread level %d, below MPI_THREAD_SERIALIZED (the "
            "library may call MPI from any thread that trains)", provided);
        return 1;
    }
    return 0;
}

enum { DUP_OK, DUP_FAILED, DUP_PENDING };

/* The job cannot go on because a rank never came to the duplication: say why, and with
 * dist.on_fault=abort end the job, as every other fault does. */
static void dup_timed_out(MPI_Comm host, double timeout_s, int abort_on_fault, char *why,
                          size_t size)
{
    any_fault = 1; /* MPI_Finalize would wait for the missing ranks */
    say(why, size, "not every rank of dist.comm reached the trainer's creation within %.3g s "
        "(dist.timeout): a rank failed before it, or is not running", timeout_s);
    if (abort_on_fault) {
        fprintf(stderr, "fastrl: %s; MPI_Abort ends the job (dist.on_fault=abort)\n", why);
        fflush(stderr);
        MPI_Abort(host, 70);
    }
}

/* A duplicate of host, with a timeout: duplicating is collective, and a rank that never
 * gets there (its trainer failed before, or it died) must not hang the others. After a
 * timeout (DUP_PENDING) the request is left pending: it cannot be cancelled, and a late
 * rank may still complete it, writing *out; the job must end. */
static int dup_within(MPI_Comm host, MPI_Comm *out, double timeout_s, int abort_on_fault,
                      char *why, size_t size)
{
    MPI_Request req;
    if (MPI_Comm_idup(host, out, &req) != MPI_SUCCESS) {
        say(why, size, "MPI_Comm_idup of dist.comm failed");
        return DUP_FAILED;
    }
    double t0 = now_s();
    for (long polls = 0;; polls++) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            say(why, size, "duplicating dist.comm failed");
            return DUP_FAILED;
        }
        if (done)
            return DUP_OK;
        if (now_s() - t0 > timeout_s) {
            dup_timed_out(host, timeout_s, abort_on_fault, why, size);
            return DUP_PENDING;
        }
        struct timespec ts = {0, polls < 2000 ? 0 : 50000};
        if (polls < 2000)
            sched_yield();
        else
            nanosleep(&ts, NULL);
    }
}

/* The two duplicates into c. When one is left pending its request still writes into c:
 * c is then never freed (a few hundred bytes, once, in a job that must end), else a
 * late rank's duplication would write into freed memory. */
static int dup_both(MPI_Comm host, frl_mpi_comm *c, double timeout_s, int abort_on_fault,
                    char *why, size_t size)
{
    int r = dup_within(host, &c->comm, timeout_s, abort_on_fault, why, size);
    if (r == DUP_OK)
        r = dup_within(host, &c->notice_comm, timeout_s, abort_on_fault, why, size);
    if (r == DUP_FAILED) {
        if (c->comm != MPI_COMM_NULL)
            MPI_Comm_free(&c->comm);
        free(c);
    }
    return r != DUP_OK;
}

static int mpi_open(int64_t fcomm, double timeout_s, int abort_on_fault, frl_mpi_comm **out,
                    int32_t *rank, int32_t *size, char *why, size_t why_size)
{
    *out = NULL;
    if (ensure_init(fcomm, why, why_size))
        return 1;
    MPI_Comm host = fcomm == -1 ? MPI_COMM_WORLD : MPI_Comm_f2c((MPI_Fint)fcomm);
    /* A handle of no communicator: MPI_Comm_f2c gives an invalid handle without an error
     * (OpenMPI's is NULL, not MPI_COMM_NULL), and duplicating it would end the process in
     * MPI's fatal error handler. */
    if (host == MPI_COMM_NULL || !host) {
        say(why, why_size, "dist.comm=%lld is not a communicator", (long long)fcomm);
        return 1;
    }
    frl_mpi_comm *c = calloc(1, sizeof *c);
    if (!c) {
        say(why, why_size, "out of memory");
        return 1;
    }
    c->comm = c->notice_comm = MPI_COMM_NULL;
    if (dup_both(host, c, timeout_s, abort_on_fault, why, why_size))
        return 1;
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(c->notice_comm, MPI_ERRORS_RETURN);
    int r = 0, n = 1;
    MPI_Comm_rank(c->comm, &r);
    MPI_Comm_size(c->comm, &n);
    c->rank = r;
    c->size = n;
    c->timeout = timeout_s;
    c->abort_on_fault = abort_on_fault;
    c->req = calloc(2 * (size_t)n, sizeof *c->req);
    c->notice_req = calloc(2 * (size_t)n, sizeof *c->notice_req);
    c->notice_in = calloc((size_t)n, 1);
    c->status = calloc(2 * (size_t)n, sizeof *c->status);
    for (int32_t i = 0; c->notice_req && i < 2 * n; i++)
        c->notice_req[i] = MPI_REQUEST_NULL;
    if (!c->req || !c->notice_req || !c->notice_in || !c->status) {
        free(c->req);
        free(c->status);
        free(c->notice_req);
        free(c->notice_in);
        MPI_Comm_free(&c->comm);
        MPI_Comm_free(&c->notice_comm);
        free(c);
        say(why, why_size, "out of memory");
        return 1;
    }
    *rank = r;
    *size = n;
    *out = c;
    return 0;
}

/* Whether request r is still pending (NULL ones are done). */
static int pending(MPI_Request *r)
{
    int done = 1;
    if (*r != MPI_REQUEST_NULL)
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
    return !done;
}

/* The ranks that have not answered, as "1, 3" into buf: whose message to this one has
 * not arrived (receives req[0..size)), or which have not taken this one's (sends
 * req[size..2 size): a large message waits for its receiver). */
static void missing_ranks(frl_mpi_comm *c, MPI_Request *req, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t p = 0; p < c->size; p++) {
        if (p == c->rank)
            continue;
        int silent = pending(&req[p]);
        silent |= pending(&req[c->size + p]);
        if (silent && used + 16 < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%d", used ? ", " : "", (int)p);
    }
    if (!buf[0])
        snprintf(buf, size, "none that MPI can name");
}

/* After a fault every call fails at once, with the fault's message. */
static int refused(const frl_mpi_comm *c, char *why, size_t size)
{
    if (c->faulted)
        say(why, size, "%s (the job cannot go on)", c->fault);
    return c->faulted;
}

/* Cancel and free requests[0..n) still pending: a late peer must not write into
 * buffers the caller frees after an error. */
static void cancel_pending(MPI_Request *requests, int n)
{
    for (int i = 0; i < n; i++)
        if (requests[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&requests[i]);
            MPI_Request_free(&requests[i]);
        }
}

/* The job cannot go on: say why, and end it or mark the communicator failed. */
static int fault(frl_mpi_comm *c, char *why, size_t size)
{
    c->faulted = 1;
    any_fault = 1;
    cancel_pending(c->req, 2 * c->size);
    cancel_pending(c->notice_req, 2 * c->size);
    say(why, size, "%s", c->fault);
    if (c->abort_on_fault) {
        fprintf(stderr, "fastrl: %s; MPI_Abort ends the job (dist.on_fault=abort)\n", c->fault);
        fflush(stderr);
        MPI_Abort(c->comm, 70);
    }
    return 1;
}

/* Poll the requests until all complete (WAIT_DONE), the timeout passes (WAIT_TIMEOUT)
 * or MPI reports an error (WAIT_ERROR; WAIT_IN_STATUS: in status, one per request, when
 * given): yielding at first (a rank a few microseconds behind), then sleeping 50 us a
 * poll, so ranks that oversubscribe the cores leave them to the ones still computing.
 * c->fault says why when it is not WAIT_DONE. */
enum { WAIT_DONE, WAIT_ERROR, WAIT_IN_STATUS, WAIT_TIMEOUT };

static int wait_all(frl_mpi_comm *c, MPI_Request *req, int n, MPI_Status *status,
                    const char *phase)
{
    double t0 = now_s();
    for (int i = 0; status && i < n; i++)
        status[i].MPI_ERROR = MPI_SUCCESS; /* set by MPI only on MPI_ERR_IN_STATUS */
    for (long polls = 0;; polls++) {
        int done = 0;
        int rc = MPI_Testall(n, req, &done, status ? status : MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            char ranks[256], text[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, text, &len);
            missing_ranks(c, req, ranks, sizeof ranks);
            snprintf(c->fault, sizeof c->fault, "rank %d of %d: MPI error during %.120s (%.100s); "
                     "no answer from rank %.100s", (int)c->rank, (int)c->size, phase, text, ranks);
            return rc == MPI_ERR_IN_STATUS && status ? WAIT_IN_STATUS : WAIT_ERROR;
        }
        if (done)
            return WAIT_DONE;
        if (polls < 2000) {
            sched_yield();
            continue;
        }
        if (now_s() - t0 > c->timeout) {
            char ranks[256];
            missing_ranks(c, req, ranks, sizeof ranks);
            frl_snprintf_c(c->fault, sizeof c->fault, "rank %d of %d: no answer from rank "
                           "%.100s within %.3g s (dist.timeout) during %.160s", (int)c->rank,
                           (int)c->size, ranks, c->timeout, phase);
            return WAIT_TIMEOUT;
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

/* A peer's message of another size than this rank's (a rank on another run or library:
 * the ranks' records would be misread): into c->fault, naming the first such peer. A
 * longer one was cut (MPI_ERR_TRUNCATE), a shorter one arrived whole. */
static int sizes_differ(frl_mpi_comm *c, size_t bytes, const char *phase)
{
    for (int32_t p = 0; p < c->size; p++) {
        const MPI_Status *st = &c->status[p];
        int cls = MPI_SUCCESS, count = 0;
        if (p == c->rank)
            continue;
        if (st->MPI_ERROR != MPI_SUCCESS)
            MPI_Error_class(st->MPI_ERROR, &cls);
        if (cls == MPI_ERR_TRUNCATE) {
            snprintf(c->fault, sizeof c->fault, "rank %d of %d: rank %d sent more than the %zu "
                     "bytes this rank expected during %.160s: the ranks do not run the same "
                     "library and run", (int)c->rank, (int)c->size, (int)p, bytes, phase);
            return 1;
        }
        if (st->MPI_ERROR != MPI_SUCCESS || MPI_Get_count(st, MPI_BYTE, &count) != MPI_SUCCESS)
            continue;
        if ((size_t)count != bytes) {
            snprintf(c->fault, sizeof c->fault, "rank %d of %d: rank %d sent %d bytes where this "
                     "rank expected %zu during %.160s: the ranks do not run the same library "
                     "and run", (int)c->rank, (int)c->size, (int)p, count, bytes, phase);
            return 1;
        }
    }
    return 0;
}

static int mpi_exchange(frl_mpi_comm *c, const void *send, size_t send_stride, size_t bytes,
                        void *recv, const char *phase, char *why, size_t why_size)
{
    if (refused(c, why, why_size))
        return 1;
    if (bytes > 0x7fffffff) {
        say(why, why_size, "%s: %zu bytes in one message is more than MPI's int count",
            phase, bytes);
        return 1;
    }
    const char *out = send;
    memcpy((char *)recv + (size_t)c->rank * bytes, out + (size_t)c->rank * send_stride, bytes);
    int tag = c->tag;
    c->tag = (c->tag + 1) % 32768; /* MPI guarantees tags up to 32767 */
    for (int32_t p = 0; p < c->size; p++)
        c->req[p] = c->req[c->size + p] = MPI_REQUEST_NULL;
    for (int32_t p = 0; p < c->size; p++) {
        if (p == c->rank)
            continue;
        if (MPI_Irecv((char *)recv + (size_t)p * bytes, (int)bytes, MPI_BYTE, p, tag, c->comm,
                      &c->req[p]) != MPI_SUCCESS ||
            MPI_Isend(out + (size_t)p * send_stride, (int)bytes, MPI_BYTE, p, tag, c->comm,
                      &c->req[c->size + p]) != MPI_SUCCESS) {
            snprintf(c->fault, sizeof c->fault, "rank %d of %d: MPI refused the messages with "
                     "rank %d during %.160s", (int)c->rank, (int)c->size, (int)p, phase);
            return fault(c, why, why_size);
        }
    }
    int waited = wait_all(c, c->req, 2 * c->size, c->status, phase);
    /* A message of another size is said as such (MPI would say "truncated" or nothing). */
    if ((waited == WAIT_DONE || waited == WAIT_IN_STATUS) && sizes_differ(c, bytes, phase))
        return fault(c, why, why_size);
    return waited == WAIT_DONE ? 0 : fault(c, why, why_size);
}

/* ---- preemption notices ---- */

static int notices_open(frl_mpi_comm *c, int64_t round, char *why, size_t why_size)
{
    if (refused(c, why, why_size))
        return 1;
    c->notices = 0;
    /* A round whose rollout failed was never closed: its requests go first. */
    cancel_pending(c->notice_req, 2 * c->size);
    for (int32_t p = 0; p < c->size; p++)
        if (p != c->rank && MPI_Irecv(c->notice_in + p, 1, MPI_BYTE, p, (int)(round % 32768),
                                      c->notice_comm, &c->notice_req[p]) != MPI_SUCCESS) {
            snprintf(c->fault, sizeof c->fault, "rank %d of %d: MPI refused a receive from rank "
                     "%d for the preemption notices", (int)c->rank, (int)c->size, (int)p);
            return fault(c, why, why_size);
        }
    return 0;
}

static int notice_send(frl_mpi_comm *c, int64_t round, char *why, size_t why_size)
{
    if (refused(c, why, why_size))
        return 1;
    for (int32_t p = 0; p < c->size; p++)
        if (p != c->rank && MPI_Isend(c->notice_out, 1, MPI_BYTE, p, (int)(round % 32768),
                                      c->notice_comm, &c->notice_req[c->size + p]) != MPI_SUCCESS) {
            snprintf(c->fault, sizeof c->fault, "rank %d of %d: MPI refused a notice to rank %d",
                     (int)c->rank, (int)c->size, (int)p);
            return fault(c, why, why_size);
        }
    return 0;
}

static int32_t notices_arrived(frl_mpi_comm *c)
{
    for (int32_t p = 0; p < c->size; p++) {
        int done = 0;
        if (p == c->rank || c->notice_req[p] == MPI_REQUEST_NULL)
            continue;
        MPI_Test(&c->notice_req[p], &done, MPI_STATUS_IGNORE);
        c->notices += done; /* a completed request becomes MPI_REQUEST_NULL */
    }
    return c->notices;
}

static int notices_close(frl_mpi_comm *c, const char *phase, char *why, size_t why_size)
{
    if (refused(c, why, why_size))
        return 1;
    if (wait_all(c, c->notice_req, 2 * c->size, NULL, phase) != WAIT_DONE)
        return fault(c, why, why_size);
    return 0;
}

static void mpi_close(frl_mpi_comm *c)
{
    if (!c)
        return;
    /* A host that finalised MPI before destroying its trainer: any MPI call now ends the
     * process (OpenMPI's "called after MPI_FINALIZE"), and MPI_Finalize freed the
     * communicators and requests; the memory alone is left to free. */
    int fin = 0;
    MPI_Finalized(&fin);
    /* A round left open (a rollout that failed) must not write into notice_in once it
     * is freed. After a fault the duplicates are left: freeing them is collective. */
    if (!fin)
        cancel_pending(c->notice_req, 2 * c->size);
    if (!fin && !c->faulted) {
        MPI_Comm_free(&c->comm);
        MPI_Comm_free(&c->notice_comm);
    }
    free(c->req);
    free(c->status);
    free(c->notice_req);
    free(c->notice_in);
    free(c);
}

static const frl_mpi_plugin table = {
    .abi = FRL_MPI_PLUGIN_ABI,
    .version = mpi_version,
    .open = mpi_open,
    .exchange = mpi_exchange,
    .notices_open = notices_open,
    .notice_send = notice_send,
    .notices_arrived = notices_arrived,
    .notices_close = notices_close,
    .close = mpi_close,
};

FRL_EXPORT const frl_mpi_plugin *frl_mpi_plugin_get(void);
const frl_mpi_plugin *frl_mpi_plugin_get(void)
{
    return &table;
}
