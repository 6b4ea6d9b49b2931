// The CUDA emulator's runtime and cuBLAS (cuda_runtime.h and cublas_v2.h say what it is
// for). One device. Memory is host memory, registered so that every pointer handed to
// the device can be checked. Each stream is a queue of work run when something waits for
// it; while it captures, its work is recorded instead, as the ops of a graph that each
// launch of the graph queues again. A block's threads are fibers on the thread that runs
// the queue.
#include "cublas_v2.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMU_TSAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef EMU_TSAN
#include <sanitizer/tsan_interface.h>
// The scheduler's own bookkeeping is ordered by the fiber switches, which TSan is told
// not to treat as synchronisation (so that it sees the kernel's threads as concurrent).
#define EMU_NO_TSAN __attribute__((no_sanitize("thread")))
#else
#define EMU_NO_TSAN
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace {

constexpr size_t DEVICE_MEMORY = size_t(16) << 30;
constexpr unsigned MAX_BLOCK_THREADS = 1024;
constexpr size_t MAX_SHARED = 48 * 1024;

void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "cuda emulator: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

thread_local cudaError_t last_error = cudaSuccess;

cudaError_t fail(cudaError_t e)
{
    last_error = e;
    return e;
}

// ---- memory ----

enum mem_kind { DEVICE, PINNED };

struct allocation {
    size_t bytes;
    mem_kind kind;
};

std::mutex mem_mutex;
std::map<uintptr_t, allocation> allocations; // by start address

// The allocation [p, p + bytes) lies in, if it lies whole in one.
bool find_range(const void *p, size_t bytes, mem_kind *kind)
{
    std::lock_guard<std::mutex> g(mem_mutex);
    uintptr_t a = (uintptr_t)p;
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin())
        return false;
    --it;
    if (a - it->first > it->second.bytes || bytes > it->second.bytes - (a - it->first))
        return false;
    if (kind)
        *kind = it->second.kind;
    return true;
}

bool on_device(const void *p, size_t bytes)
{
    mem_kind k;
    return find_range(p, bytes, &k) && k == DEVICE;
}

// Host memory: pinned, or not registered at all (pageable). A range that starts in device
// memory is not host memory.
bool on_host(const void *p, size_t bytes, bool *pinned)
{
    mem_kind k;
    if (find_range(p, 1, &k)) {
        *pinned = k == PINNED;
        return k == PINNED && find_range(p, bytes, nullptr);
    }
    *pinned = false;
    return true;
}

// What an allocation of bytes takes: whole 256-byte lines, as cudaMalloc aligns.
size_t padded(size_t bytes)
{
    return bytes ? (bytes + 255) / 256 * 256 : 256;
}

cudaError_t allocate(void **p, size_t bytes, mem_kind kind)
{
    if (!p)
        return fail(cudaErrorInvalidValue);
    *p = nullptr;
    if (bytes > DEVICE_MEMORY)
        return fail(cudaErrorMemoryAllocation);
    void *m = std::aligned_alloc(256, padded(bytes));
    if (!m)
        return fail(cudaErrorMemoryAllocation);
    // Fresh memory holds NaNs, so that a read of something never written shows; under
    // ASan the rounding's tail is out of bounds, as the allocation's end is to memcheck.
    std::memset(m, 0xff, padded(bytes));
#ifdef EMU_ASAN
    ASAN_POISON_MEMORY_REGION((char *)m + bytes, padded(bytes) - bytes);
#endif
    std::lock_guard<std::mutex> g(mem_mutex);
    allocations[(uintptr_t)m] = allocation{bytes, kind};
    *p = m;
    return cudaSuccess;
}

cudaError_t release(void *p, mem_kind kind);

// ---- streams ----

struct op_fault {
    cudaError_t code;
    char what[256];
};

} // namespace

struct frl_emu_stream {
    std::mutex m;
    std::deque<std::function<void(op_fault &)>> queue;
    uint64_t queued = 0, done = 0;
    op_fault fault = {cudaSuccess, ""};
};

struct frl_emu_event {
    frl_emu_stream *stream = nullptr; // where it was last recorded
    uint64_t position = 0;            // the work queued on it before the record
};

namespace {

// The live handles of one kind, so that a destroyed or foreign handle is an error, as
// from the runtime, rather than a crash.
template <typename T> struct handle_set {
    std::mutex m;
    std::set<T *> live;

    T *add(T *h)
    {
        std::lock_guard<std::mutex> g(m);
        live.insert(h);
        return h;
    }
    bool remove(T *h)
    {
        std::lock_guard<std::mutex> g(m);
        return live.erase(h) != 0;
    }
    bool has(T *h)
    {
        std::lock_guard<std::mutex> g(m);
        return live.count(h) != 0;
    }
};

std::mutex streams_mutex; // the streams, and the events' fields
std::set<frl_emu_stream *> streams;
handle_set<frl_emu_event> events;
frl_emu_stream legacy_stream; // stream 0

frl_emu_stream *stream_of(cudaStream_t s)
{
    if (!s)
        return &legacy_stream;
    std::lock_guard<std::mutex> g(streams_mutex);
    return streams.count(s) ? s : nullptr;
}

bool valid_event(cudaEvent_t e)
{
    return events.has(e);
}

void enqueue(frl_emu_stream *s, std::function<void(op_fault &)> op)
{
    std::lock_guard<std::mutex> g(s->m);
    s->queue.push_back(std::move(op));
    s->queued++;
}

// Runs the stream's work up to position `upto` (the whole queue: UINT64_MAX). A fault
// stays with the stream until its next synchronisation reports it.
void run_until(frl_emu_stream *s, uint64_t upto)
{
    std::lock_guard<std::mutex> g(s->m);
    while (s->done < upto && !s->queue.empty()) {
        auto op = std::move(s->queue.front());
        s->queue.pop_front();
        op_fault f = {cudaSuccess, ""};
        op(f);
        s->done++;
        if (f.code != cudaSuccess && s->fault.code == cudaSuccess) {
            s->fault = f;
            report("%s", f.what);
        }
    }
}

// What cudaFree does: every stream of the device finishes first.
void run_all()
{
    std::vector<frl_emu_stream *> all;
    {
        std::lock_guard<std::mutex> g(streams_mutex);
        all.assign(streams.begin(), streams.end());
    }
    all.push_back(&legacy_stream);
    for (frl_emu_stream *s : all)
        run_until(s, UINT64_MAX);
}

cudaError_t release(void *p, mem_kind kind)
{
    if (!p)
        return cudaSuccess;
    run_all();
    {
        std::lock_guard<std::mutex> g(mem_mutex);
        auto it = allocations.find((uintptr_t)p);
        if (it == allocations.end() || it->second.kind != kind) {
            report("%s of %p, which is not the start of %s", kind == DEVICE ? "cudaFree" : "cudaFreeHost",
                   p, kind == DEVICE ? "device memory" : "page-locked memory");
            return fail(cudaErrorInvalidValue);
        }
#ifdef EMU_ASAN
        ASAN_UNPOISON_MEMORY_REGION(p, padded(it->second.bytes));
#endif
        allocations.erase(it);
    }
    std::free(p);
    return cudaSuccess;
}

// ---- stream capture ----

// One op of a stream's work: what it runs, and the check that the memory it uses is
// still there. The call checked that once; a graph's every replay checks it again.
struct graph_op {
    const char *what;
    std::function<bool()> live;
    std::function<void(op_fault &)> run;

    // A replay. Memory freed since the capture is a fault, as the GPU's access would be.
    void operator()(op_fault &f) const
    {
        if (live()) {
            run(f);
            return;
        }
        f.code = cudaErrorIllegalAddress;
        std::snprintf(f.what, sizeof f.what,
                      "%s, replayed by a graph: memory it uses was freed since the capture", what);
    }
};

typedef std::vector<graph_op> graph_ops;

struct capture {
    cudaStreamCaptureMode mode;
    std::thread::id thread; // the one that began it
    bool invalidated;
    graph_ops ops;
};

std::mutex capture_mutex;
std::map<frl_emu_stream *, capture> captures; // by capturing stream

// Whether a call that a capture forbids anywhere (it would synchronise the device, or
// allocate or free memory) is forbidden now. The calling thread's mode being the
// runtime's default, Global, its own captures forbid it unless Relaxed, and every other
// thread's Global ones; as with the runtime, those captures are invalidated.
bool capture_forbids(const char *call)
{
    std::lock_guard<std::mutex> g(capture_mutex);
    bool forbidden = false;
    for (auto &entry : captures) {
        capture &c = entry.second;
        if (c.mode == cudaStreamCaptureModeGlobal ||
            (c.mode == cudaStreamCaptureModeThreadLocal && c.thread == std::this_thread::get_id())) {
            c.invalidated = true;
            forbidden = true;
        }
    }
    if (forbidden)
        report("%s while a stream captures: refused, and the capture invalidated", call);
    return forbidden;
}

// The same for a call on the capturing stream itself that a capture cannot record
// (synchronising or destroying it, an event on it, a copy of pageable memory), whatever
// the mode.
bool capture_refuses(frl_emu_stream *s, const char *call)
{
    std::lock_guard<std::mutex> g(capture_mutex);
    auto it = captures.find(s);
    if (it == captures.end())
        return false;
    it->second.invalidated = true;
    report("%s on a stream that captures: refused, and the capture invalidated", call);
    return true;
}

// As on the runtime, an error during a capture invalidates it.
void invalidate_capture(frl_emu_stream *s)
{
    std::lock_guard<std::mutex> g(capture_mutex);
    auto it = captures.find(s);
    if (it != captures.end())
        it->second.invalidated = true;
}

// A call on s that failed its checks.
cudaError_t fail_on(frl_emu_stream *s, cudaError_t e)
{
    invalidate_capture(s);
    return fail(e);
}

// Queues the op on s, or records it while s captures. `replay`: the op comes from a
// graph, so its check runs again when the stream gets there.
cudaError_t submit(frl_emu_stream *s, graph_op op, bool replay = false)
{
    {
        std::lock_guard<std::mutex> g(capture_mutex);
        auto it = captures.find(s);
        if (it != captures.end()) {
            if (it->second.invalidated)
                return fail(cudaErrorStreamCaptureInvalidated);
            it->second.ops.push_back(std::move(op));
            return cudaSuccess;
        }
    }
    if (replay)
        enqueue(s, std::move(op));
    else
        enqueue(s, std::move(op.run));
    return cudaSuccess;
}

} // namespace

// A graph and its instances share the captured ops, which the queued launches share
// too: each may be destroyed while the others still need them.
struct frl_emu_graph {
    std::shared_ptr<const graph_ops> ops;
};

struct frl_emu_graph_exec {
    std::shared_ptr<const graph_ops> ops;
};

namespace {

handle_set<frl_emu_graph> graphs;
handle_set<frl_emu_graph_exec> graph_execs;

// ---- the fault knobs of tests/cuda/ops_host.c ----

bool knob_on(const char *name)
{
    const char *v = std::getenv(name);
    return v && v[0] == '1';
}

// A fault knob counting down: FAKE_CUDA_FAIL_SYNC=n (synchronisations) or
// FAKE_CUDA_FAIL_ALLOC=n (cudaMalloc), read again whenever the variable changes, makes the
// n-th call from then on fail.
struct countdown {
    explicit countdown(const char *knob) : name(knob) {}
    const char *name;
    std::mutex m;
    const char *seen = nullptr;
    int left = 0;
};

bool counted_out(countdown &k)
{
    std::lock_guard<std::mutex> g(k.m);
    const char *v = std::getenv(k.name);
    if (v != k.seen) {
        k.seen = v;
        k.left = v ? std::atoi(v) : 0;
    }
    return k.left > 0 && --k.left == 0;
}

bool injected_sync_failure()
{
    static countdown k("FAKE_CUDA_FAIL_SYNC");
    return counted_out(k);
}

bool injected_alloc_failure()
{
    static countdown k("FAKE_CUDA_FAIL_ALLOC");
    return counted_out(k);
}

// ---- blocks as fibers ----

// A fiber's saved context. On x86-64 a switch saves the callee-saved registers and the
// floating-point control words on the old stack and returns on the new one: ucontext's
// swapcontext also saves the signal mask, a system call, which made it most of the
// emulator's time. Elsewhere ucontext does it all.
#if defined(__x86_64__)
struct context {
    void *sp = nullptr;
};

extern "C" void frl_emu_switch(void **save_sp, void *new_sp);
__asm__(".text\n"
        ".p2align 4\n"
        ".type frl_emu_switch, @function\n"
        "frl_emu_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size frl_emu_switch, .-frl_emu_switch\n");

void switch_context(context *from, context *to)
{
    frl_emu_switch(&from->sp, to->sp);
}

// A stack whose first switch "returns" into entry, as if entry had been called.
void make_context(context *c, char *stack, size_t bytes, void (*entry)())
{
    uintptr_t top = ((uintptr_t)stack + bytes) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    *--sp = 0;                  // entry's return address: it never returns
    *--sp = (uint64_t)entry;    // where the switch's ret goes
    for (int i = 0; i < 6; i++) // rbp, rbx, r12-r15
        *--sp = 0;
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    *--sp = (uint64_t)mxcsr | (uint64_t)fpucw << 32;
    c->sp = sp;
}
#else
struct context {
    ucontext_t uc;
};

void switch_context(context *from, context *to)
{
    swapcontext(&from->uc, &to->uc);
}

void make_context(context *c, char *stack, size_t bytes, void (*entry)())
{
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = bytes;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, entry, 0);
}
#endif

enum fiber_state { UNSTARTED, RUNNING, AT_BARRIER, FINISHED };

// A fiber is one thread of a block. It lives as long as the process: after the thread
// finishes the kernel, it waits to run the next block's thread of the same index.
struct fiber {
    context ctx;
    char *stack = nullptr;
    fiber_state state = UNSTARTED;
    void *asan_fake = nullptr;
    void *tsan_fiber = nullptr;
};

#if defined(EMU_ASAN) || defined(EMU_TSAN)
constexpr size_t STACK_BYTES = 512 * 1024;
#else
constexpr size_t STACK_BYTES = 128 * 1024;
#endif

// How a kernel's threads run: found out on its first block.
enum grid_mode { UNKNOWN, PLAIN, FIBERS };

// The fibers. One grid runs at a time, whichever thread runs its stream's queue: the
// device's kernels run one after another, which the ordering of streams allows.
struct runner {
    context sched;
    fiber fibers[MAX_BLOCK_THREADS];
    frl_emu::work *w = nullptr;
    unsigned current = 0;
    bool in_fiber = false;
    bool diverged = false;
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
    void *sched_fake = nullptr;
    void *tsan_sched = nullptr;
    char *barrier_sync = nullptr; // TSan's happens-before across a barrier, per block
    char launch_sync = 0, finish_sync = 0;

    ~runner()
    {
        for (fiber &f : fibers) {
            if (f.stack)
                munmap(f.stack, STACK_BYTES);
#ifdef EMU_TSAN
            if (f.tsan_fiber)
                __tsan_destroy_fiber(f.tsan_fiber);
#endif
        }
    }
};

runner the_runner;
std::mutex grid_mutex;

EMU_NO_TSAN void set_thread_index(unsigned t)
{
    threadIdx.x = t % blockDim.x;
    threadIdx.y = t / blockDim.x % blockDim.y;
    threadIdx.z = t / (blockDim.x * blockDim.y);
}

// Entering fiber `me`. The scheduler's own writes happen before (launch_sync); the
// other fibers' do not, unless a barrier orders them.
EMU_NO_TSAN void arrived_in_fiber(unsigned me)
{
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(the_runner.fibers[me].asan_fake, &the_runner.sched_bottom,
                                    &the_runner.sched_size);
#endif
#ifdef EMU_TSAN
    __tsan_acquire(&the_runner.launch_sync);
#endif
    (void)me;
}

EMU_NO_TSAN void yield_to_scheduler(unsigned me)
{
    fiber &f = the_runner.fibers[me];
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&f.asan_fake, the_runner.sched_bottom, the_runner.sched_size);
#endif
#ifdef EMU_TSAN
    __tsan_switch_to_fiber(the_runner.tsan_sched, __tsan_switch_to_fiber_no_sync);
#endif
    the_runner.in_fiber = false;
    switch_context(&f.ctx, &the_runner.sched);
    the_runner.in_fiber = true;
    arrived_in_fiber(me);
}

EMU_NO_TSAN void fiber_main()
{
    runner &r = the_runner;
    unsigned me = r.current;
    arrived_in_fiber(me);
    for (;;) {
        r.w->run();
#ifdef EMU_TSAN
        __tsan_release(&r.finish_sync);
#endif
        r.fibers[me].state = FINISHED;
        yield_to_scheduler(me);
    }
}

EMU_NO_TSAN void switch_to(runner &r, unsigned t)
{
    fiber &f = r.fibers[t];
    r.current = t;
    set_thread_index(t);
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&r.sched_fake, f.stack, STACK_BYTES);
#endif
#ifdef EMU_TSAN
    __tsan_release(&r.launch_sync);
    __tsan_switch_to_fiber(f.tsan_fiber, __tsan_switch_to_fiber_no_sync);
#endif
    r.in_fiber = true;
    switch_context(&r.sched, &f.ctx);
    r.in_fiber = false;
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(r.sched_fake, nullptr, nullptr);
#endif
}

// Fiber t, ready to run its thread of the next block from the kernel's start. One left
// at a barrier (its block failed) starts afresh.
EMU_NO_TSAN void prepare_fiber(runner &r, unsigned t)
{
    fiber &f = r.fibers[t];
    if (!f.stack) {
        void *m = mmap(nullptr, STACK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            report("out of memory for a fiber's stack");
            std::abort(); // a test tool: the test cannot go on
        }
        f.stack = (char *)m;
    }
    if (f.state == UNSTARTED || f.state == AT_BARRIER) {
#ifdef EMU_TSAN
        if (f.tsan_fiber)
            __tsan_destroy_fiber(f.tsan_fiber);
        f.tsan_fiber = __tsan_create_fiber(0);
#endif
        make_context(&f.ctx, f.stack, STACK_BYTES, fiber_main);
    }
    f.state = RUNNING;
}

// Runs every running fiber to its next barrier or its end, in the given order. Returns
// 1 when all finished, 0 when all wait at a barrier, -1 when some did each (a barrier
// that not every thread reached: a hang or worse on a GPU).
EMU_NO_TSAN int run_round(runner &r, unsigned nt, bool backwards)
{
    for (unsigned i = 0; i < nt; i++) {
        unsigned t = backwards ? nt - 1 - i : i;
        if (r.fibers[t].state == RUNNING)
            switch_to(r, t);
    }
    unsigned finished = 0;
    for (unsigned t = 0; t < nt; t++)
        finished += r.fibers[t].state == FINISHED;
    return finished == nt ? 1 : finished == 0 ? 0 : -1;
}

// The rounds of one block, its fibers prepared (thread 0's may have run its first
// segment). The order alternates, so that a read of another thread's write with no
// barrier between sees the old value in one round or the other.
EMU_NO_TSAN bool run_fibers(runner &r, unsigned nt)
{
    for (unsigned round = 0;; round++) {
        int k = run_round(r, nt, round % 2 == 1);
        if (k == 1)
            return true;
        if (k < 0)
            return false;
        for (unsigned t = 0; t < nt; t++)
            r.fibers[t].state = RUNNING;
    }
}

// Threads [first, nt) as plain calls, which is much faster than fibers. One that meets
// a barrier anyway is a divergent barrier.
EMU_NO_TSAN bool run_plain(runner &r, unsigned first, unsigned nt)
{
    for (unsigned t = first; t < nt && !r.diverged; t++) {
        set_thread_index(t);
        r.w->run();
    }
    return !r.diverged;
}

// One block. Until the kernel's mode is known, thread 0 runs alone as a fiber: if it
// ends without meeting a barrier, the kernel has none.
EMU_NO_TSAN bool run_block(runner &r, unsigned nt, grid_mode *mode)
{
    if (*mode == PLAIN)
        return run_plain(r, 0, nt);
#ifdef EMU_TSAN
    r.barrier_sync = new char[1];
#endif
    prepare_fiber(r, 0);
    switch_to(r, 0);
    if (*mode == UNKNOWN)
        *mode = r.fibers[0].state == FINISHED ? PLAIN : FIBERS;
    bool ok;
    if (*mode == PLAIN)
        ok = run_plain(r, 1, nt);
    else {
        for (unsigned t = 1; t < nt; t++)
            prepare_fiber(r, t);
        ok = run_fibers(r, nt);
    }
#ifdef EMU_TSAN
    // Blocks are ordered to TSan: their shared memory is one static here, which the
    // next block's threads reuse. So races within a block are found, not between blocks.
    __tsan_acquire(&r.finish_sync);
    delete[] r.barrier_sync;
    r.barrier_sync = nullptr;
#endif
    return ok;
}

EMU_NO_TSAN void run_grid(const char *kernel, dim3 grid, dim3 block, frl_emu::work *w,
                          op_fault &fault)
{
    std::lock_guard<std::mutex> g(grid_mutex);
    runner &r = the_runner;
    r.w = w;
    r.diverged = false;
    gridDim = grid;
    blockDim = block;
    unsigned nt = block.x * block.y * block.z;
#ifdef EMU_TSAN
    r.tsan_sched = __tsan_get_current_fiber(); // this OS thread's
#endif
    grid_mode mode = UNKNOWN;
    bool ok = true;
    for (unsigned z = 0; z < grid.z && ok; z++)
        for (unsigned y = 0; y < grid.y && ok; y++)
            for (unsigned x = 0; x < grid.x && ok; x++) {
                blockIdx = uint3{x, y, z};
                ok = run_block(r, nt, &mode);
            }
#ifdef EMU_TSAN
    __tsan_acquire(&r.finish_sync);
#endif
    if (!ok) {
        fault.code = cudaErrorLaunchFailure;
        std::snprintf(fault.what, sizeof fault.what,
                      "%s: a __syncthreads that not every thread of block (%u,%u,%u) reached",
                      kernel, blockIdx.x, blockIdx.y, blockIdx.z);
    }
    r.w = nullptr;
}

bool valid_config(dim3 g, dim3 b, size_t shmem)
{
    uint64_t nt = (uint64_t)b.x * b.y * b.z;
    return nt >= 1 && nt <= MAX_BLOCK_THREADS && b.x <= 1024 && b.y <= 1024 && b.z <= 64 &&
           g.x >= 1 && g.x <= 0x7fffffffu && g.y >= 1 && g.y <= 65535 && g.z >= 1 &&
           g.z <= 65535 && shmem <= MAX_SHARED;
}

} // namespace

EMU_NO_TSAN void __syncthreads(void)
{
    runner &r = the_runner;
    if (!r.in_fiber) {
        // a plain call: block 0's thread 0 finished without meeting this barrier
        r.diverged = true;
        return;
    }
    unsigned me = r.current;
    r.fibers[me].state = AT_BARRIER;
#ifdef EMU_TSAN
    // every thread's writes before the barrier happen before every read after it (the
    // switches themselves are no synchronisation to TSan)
    __tsan_release(r.barrier_sync);
#endif
    yield_to_scheduler(me);
#ifdef EMU_TSAN
    __tsan_acquire(r.barrier_sync);
#endif
}

// Each thread leaves its value in the block's slot, all meet at a barrier, each reads
// its partner's (lane ^ lane_mask within its warp of 32), and a second barrier keeps the
// slots until everyone has read.
float __shfl_xor_sync(unsigned mask, float v, int lane_mask)
{
    (void)mask;
    static float slot[1024];
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    slot[t] = v;
    __syncthreads();
    unsigned partner = (t & ~31u) | ((t & 31u) ^ (unsigned)lane_mask);
    float r = partner < blockDim.x * blockDim.y * blockDim.z ? slot[partner] : v;
    __syncthreads();
    return r;
}

namespace frl_emu {

// Device memory, or page-locked memory: with unified addressing the device reaches it
// at the host's address, whatever cudaHostAlloc's flags. Pageable memory it cannot.
bool device_arg(const void *p, const char *kernel, int index)
{
    if (find_range(p, 1, nullptr))
        return true;
    report("%s: argument %d (%p) is neither device memory nor page-locked host memory", kernel,
           index, p);
    return false;
}

void launch_work(const char *kernel, dim3 grid, dim3 block, size_t shmem, cudaStream_t s,
                 std::shared_ptr<work> w)
{
    frl_emu_stream *st = stream_of(s);
    // A pointer argument the kernel cannot reach: on a GPU the kernel would fault; here
    // the launch fails with the error of that fault, which the caller's launch check
    // reports.
    if (!w->pointers_ok(kernel)) {
        fail_on(st, cudaErrorIllegalAddress);
        return;
    }
    if (!st) {
        report("%s: launched on an unknown stream", kernel);
        fail(cudaErrorInvalidResourceHandle);
        return;
    }
    if (!valid_config(grid, block, shmem)) {
        report("%s: invalid configuration grid (%u,%u,%u) block (%u,%u,%u) shared %zu", kernel,
               grid.x, grid.y, grid.z, block.x, block.y, block.z, shmem);
        fail_on(st, cudaErrorInvalidConfiguration);
        return;
    }
    submit(st, graph_op{kernel, [kernel, w] { return w->pointers_ok(kernel); },
                        [kernel, grid, block, w](op_fault &f) {
                            run_grid(kernel, grid, block, w.get(), f);
                        }});
}

} // namespace frl_emu

// ---- runtime API ----

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return fail(cudaErrorInvalidValue);
    const char *mode = std::getenv("FAKE_CUDA");
    *count = mode && !std::strcmp(mode, "nodevice") ? 0 : 1;
    return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device)
{
    if (!p)
        return fail(cudaErrorInvalidValue);
    if (device != 0)
        return fail(cudaErrorInvalidDevice);
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "CUDA emulator (host stand-in, tests/cuda/emu)");
    p->major = 9;
    p->minor = 0;
    p->totalGlobalMem = DEVICE_MEMORY;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return last_error;
    return device >= 0 && device < n ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureWrongThread:
        return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorEmuInjectedSync: return "injected device failure (FAKE_CUDA_FAIL_SYNC)";
    case cudaErrorEmuNoPinned: return "page-locked memory refused (FAKE_CUDA_NO_PINNED)";
    case cudaErrorEmuNoEvents: return "event creation refused (FAKE_CUDA_NO_EVENTS)";
    }
    return "unknown error";
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    if (!s)
        return fail(cudaErrorInvalidValue);
    *s = new frl_emu_stream;
    std::lock_guard<std::mutex> g(streams_mutex);
    streams.insert(*s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!s || !stream_of(s))
        return fail(cudaErrorInvalidResourceHandle);
    if (capture_refuses(s, "cudaStreamDestroy"))
        return fail(cudaErrorStreamCaptureUnsupported);
    run_until(s, UINT64_MAX);
    {
        std::lock_guard<std::mutex> g(streams_mutex);
        streams.erase(s);
        std::lock_guard<std::mutex> ge(events.m);
        for (frl_emu_event *e : events.live)
            if (e->stream == s)
                e->stream = nullptr; // a wait on it now has nothing to wait for
    }
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    frl_emu_stream *st = stream_of(s);
    if (!st)
        return fail(cudaErrorInvalidResourceHandle);
    if (capture_refuses(st, "cudaStreamSynchronize"))
        return fail(cudaErrorStreamCaptureUnsupported);
    run_until(st, UINT64_MAX);
    op_fault f;
    {
        std::lock_guard<std::mutex> g(st->m);
        f = st->fault;
        st->fault.code = cudaSuccess;
    }
    if (f.code != cudaSuccess)
        return fail(f.code);
    return injected_sync_failure() ? fail(cudaErrorEmuInjectedSync) : cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    (void)flags;
    if (!e)
        return fail(cudaErrorInvalidValue);
    *e = nullptr;
    if (knob_on("FAKE_CUDA_NO_EVENTS"))
        return fail(cudaErrorEmuNoEvents);
    *e = events.add(new frl_emu_event);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!events.remove(e))
        return fail(cudaErrorInvalidResourceHandle);
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    frl_emu_stream *st = stream_of(s);
    if (!st || !valid_event(e))
        return fail(cudaErrorInvalidResourceHandle);
    // A real capture would follow the event to the streams that wait on it; the
    // emulator's captures hold one stream's work, all that ops_cuda.cu captures.
    if (capture_refuses(st, "cudaEventRecord"))
        return fail(cudaErrorStreamCaptureUnsupported);
    uint64_t position;
    {
        std::lock_guard<std::mutex> g(st->m);
        position = st->queued;
    }
    std::lock_guard<std::mutex> g(streams_mutex); // the events' fields are under it
    e->stream = st;
    e->position = position;
    return cudaSuccess;
}

// The stream's later work comes after the event's: run the recording stream up to it.
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    frl_emu_stream *st = stream_of(s);
    if (!st || !valid_event(e))
        return fail(cudaErrorInvalidResourceHandle);
    if (capture_refuses(st, "cudaStreamWaitEvent"))
        return fail(cudaErrorStreamCaptureUnsupported);
    frl_emu_stream *from = nullptr;
    uint64_t upto = 0;
    {
        std::lock_guard<std::mutex> g(streams_mutex);
        from = e->stream;
        upto = e->position;
    }
    if (from && from != st)
        run_until(from, upto);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (capture_forbids("cudaMalloc"))
        return fail(cudaErrorStreamCaptureUnsupported);
    if (p && injected_alloc_failure()) {
        *p = nullptr;
        return fail(cudaErrorMemoryAllocation);
    }
    return allocate(p, bytes, DEVICE);
}

cudaError_t cudaFree(void *p)
{
    if (capture_forbids("cudaFree"))
        return fail(cudaErrorStreamCaptureUnsupported);
    return release(p, DEVICE);
}

// Every flag gives the same memory here: kernels reach it whatever the flags, as with
// unified addressing, and write-combining changes only the host's speed.
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    if (capture_forbids("cudaHostAlloc"))
        return fail(cudaErrorStreamCaptureUnsupported);
    if (flags & ~(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
        return fail(cudaErrorInvalidValue);
    if (p && knob_on("FAKE_CUDA_NO_PINNED")) {
        *p = nullptr;
        return fail(cudaErrorEmuNoPinned);
    }
    return allocate(p, bytes, PINNED);
}

cudaError_t cudaFreeHost(void *p)
{
    if (capture_forbids("cudaFreeHost"))
        return fail(cudaErrorStreamCaptureUnsupported);
    return release(p, PINNED);
}

// Unified addressing: the device reaches page-locked memory at the host's address.
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned flags)
{
    mem_kind k;
    if (!pDevice || flags != 0 || !find_range(pHost, 1, &k) || k != PINNED) {
        report("cudaHostGetDevicePointer(%p, flags %u): not page-locked memory", pHost, flags);
        return fail(cudaErrorInvalidValue);
    }
    *pDevice = pHost;
    return cudaSuccess;
}

namespace {

bool copy_ends_ok(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, bool *dst_pinned,
                  bool *src_pinned)
{
    *dst_pinned = *src_pinned = false;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return on_device(dst, bytes) && on_host(src, bytes, src_pinned);
    case cudaMemcpyDeviceToHost:
        return on_device(src, bytes) && on_host(dst, bytes, dst_pinned);
    case cudaMemcpyDeviceToDevice:
        return on_device(dst, bytes) && on_device(src, bytes);
    default:
        return false;
    }
}

// At a replay: the copy's ends are still the memory they were at its capture, where the
// host's end was page-locked.
bool copy_live(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    bool dst_pinned, src_pinned;
    return copy_ends_ok(dst, src, bytes, kind, &dst_pinned, &src_pinned) &&
           (kind != cudaMemcpyHostToDevice || src_pinned) &&
           (kind != cudaMemcpyDeviceToHost || dst_pinned);
}

} // namespace

// Pageable host memory behaves as CUDA documents: a copy from it is staged at once, a
// copy to it waits for the stream, and neither can be captured. Page-locked memory is
// read or written when the stream gets there, so a caller that reads it before
// synchronising sees old data.
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s)
{
    frl_emu_stream *st = stream_of(s);
    if (!st)
        return fail(cudaErrorInvalidResourceHandle);
    if (!bytes)
        return cudaSuccess;
    bool dst_pinned, src_pinned;
    if (!dst || !src || !copy_ends_ok(dst, src, bytes, kind, &dst_pinned, &src_pinned)) {
        report("cudaMemcpyAsync(%p, %p, %zu, kind %d): an end is not the memory its kind says",
               dst, src, bytes, (int)kind);
        return fail_on(st, cudaErrorInvalidValue);
    }
    bool pageable = (kind == cudaMemcpyHostToDevice && !src_pinned) ||
                    (kind == cudaMemcpyDeviceToHost && !dst_pinned);
    if (pageable && capture_refuses(st, "cudaMemcpyAsync of pageable host memory"))
        return fail(cudaErrorStreamCaptureUnsupported);
    if (kind == cudaMemcpyDeviceToHost && !dst_pinned) {
        run_until(st, UINT64_MAX);
        std::memcpy(dst, src, bytes);
        return cudaSuccess;
    }
    if (kind == cudaMemcpyHostToDevice && !src_pinned) {
        auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + bytes);
        enqueue(st, [dst, staged](op_fault &) { std::memcpy(dst, staged->data(), staged->size()); });
        return cudaSuccess;
    }
    return submit(st, graph_op{"cudaMemcpyAsync",
                               [dst, src, bytes, kind] { return copy_live(dst, src, bytes, kind); },
                               [dst, src, bytes](op_fault &) { std::memmove(dst, src, bytes); }});
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t s)
{
    frl_emu_stream *st = stream_of(s);
    if (!st)
        return fail(cudaErrorInvalidResourceHandle);
    if (!bytes)
        return cudaSuccess;
    if (!on_device(dst, bytes)) {
        report("cudaMemsetAsync(%p, %zu): not device memory", dst, bytes);
        return fail_on(st, cudaErrorInvalidValue);
    }
    return submit(st, graph_op{"cudaMemsetAsync", [dst, bytes] { return on_device(dst, bytes); },
                               [dst, value, bytes](op_fault &) { std::memset(dst, value, bytes); }});
}

// ---- stream capture and graphs ----

// Capture of the legacy stream, which every blocking stream waits for, is refused, as by
// the runtime.
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
    frl_emu_stream *st = stream_of(s);
    if (!st)
        return fail(cudaErrorInvalidResourceHandle);
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return fail(cudaErrorInvalidValue);
    if (st == &legacy_stream) {
        report("cudaStreamBeginCapture on the legacy stream (0)");
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    std::lock_guard<std::mutex> g(capture_mutex);
    if (!captures.emplace(st, capture{mode, std::this_thread::get_id(), false, {}}).second)
        return fail(cudaErrorIllegalState); // it captures already
    return cudaSuccess;
}

// Ends the capture whatever it holds; an invalidated one gives no graph.
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    frl_emu_stream *st = stream_of(s);
    if (!st)
        return fail(cudaErrorInvalidResourceHandle);
    if (!graph)
        return fail(cudaErrorInvalidValue);
    *graph = nullptr;
    capture c;
    {
        std::lock_guard<std::mutex> g(capture_mutex);
        auto it = captures.find(st);
        if (it == captures.end())
            return fail(cudaErrorIllegalState);
        if (it->second.mode != cudaStreamCaptureModeRelaxed &&
            it->second.thread != std::this_thread::get_id())
            return fail(cudaErrorStreamCaptureWrongThread);
        c = std::move(captures.extract(it).mapped());
    }
    if (c.invalidated)
        return fail(cudaErrorStreamCaptureInvalidated);
    *graph = graphs.add(new frl_emu_graph{std::make_shared<const graph_ops>(std::move(c.ops))});
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status)
{
    frl_emu_stream *st = stream_of(s);
    if (!st)
        return fail(cudaErrorInvalidResourceHandle);
    if (!status)
        return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> g(capture_mutex);
    auto it = captures.find(st);
    *status = it == captures.end()      ? cudaStreamCaptureStatusNone
              : it->second.invalidated ? cudaStreamCaptureStatusInvalidated
                                       : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags)
{
    (void)flags; // none changes what a launch does here
    if (!exec)
        return fail(cudaErrorInvalidValue);
    *exec = nullptr;
    if (!graphs.has(graph))
        return fail(cudaErrorInvalidResourceHandle);
    *exec = graph_execs.add(new frl_emu_graph_exec{graph->ops});
    return cudaSuccess;
}

// The graph's ops, in order, as work of the stream (or of its capture), each checking
// again that its memory is still there when it runs.
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    frl_emu_stream *st = stream_of(s);
    if (!st || !graph_execs.has(exec))
        return fail(cudaErrorInvalidResourceHandle);
    for (const graph_op &op : *exec->ops) {
        cudaError_t e = submit(st, op, true);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

// Launches still queued keep the ops they need.
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (!graph_execs.remove(exec))
        return fail(cudaErrorInvalidResourceHandle);
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    if (!graphs.remove(graph))
        return fail(cudaErrorInvalidResourceHandle);
    delete graph;
    return cudaSuccess;
}

// ---- cuBLAS ----

struct frl_emu_blas {
    cudaStream_t stream = nullptr;
    bool tf32 = false;
};

namespace {

handle_set<frl_emu_blas> handles;

bool valid_handle(cublasHandle_t h)
{
    return handles.has(h);
}

// TensorFloat-32: 10 bits of mantissa, rounded to nearest (ties away, as the tensor
// cores' conversion does).
float to_tf32(float x)
{
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u = (u + 0x1000u) & 0xffffe000u;
    std::memcpy(&x, &u, 4);
    return x;
}

struct gemm_args {
    bool ta, tb, tf32;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
};

// op(X) as a dense column-major rows x cols matrix, its factors rounded as the math
// mode says. The products are the emulator's own arithmetic, on the thread that runs
// the queue: TSan has nothing to find in them, and its instrumentation would make them
// the slowest part of a sanitizer run.
EMU_NO_TSAN std::vector<float> operand(const float *x, int ld, bool trans, int rows, int cols, bool tf32)
{
    std::vector<float> out((size_t)rows * (size_t)cols);
    for (int c = 0; c < cols; c++)
        for (int r = 0; r < rows; r++) {
            float v = trans ? x[c + (size_t)r * ld] : x[r + (size_t)c * ld];
            out[r + (size_t)c * rows] = tf32 ? to_tf32(v) : v;
        }
    return out;
}

// C = alpha op(A) op(B) + beta C, column-major, by the definition (beta = 0: C is not
// read, so NaN there does not spread).
EMU_NO_TSAN void gemm(const gemm_args &g)
{
    std::vector<float> a = operand(g.a, g.lda, g.ta, g.m, g.k, g.tf32);
    std::vector<float> b = operand(g.b, g.ldb, g.tb, g.k, g.n, g.tf32);
    std::vector<float> col((size_t)g.m);
    for (int j = 0; j < g.n; j++) {
        std::fill(col.begin(), col.end(), 0.0f);
        for (int l = 0; l < g.k; l++) {
            float bl = b[l + (size_t)j * g.k];
            const float *al = a.data() + (size_t)l * g.m;
            for (int i = 0; i < g.m; i++)
                col[(size_t)i] += al[i] * bl;
        }
        float *cj = g.c + (size_t)j * g.ldc;
        for (int i = 0; i < g.m; i++)
            cj[i] = g.alpha * col[(size_t)i] + (g.beta == 0.0f ? 0.0f : g.beta * cj[i]);
    }
}

// The operand (rows x cols, column-major with leading dimension ld) lies whole in device
// memory.
bool operand_ok(const float *p, int rows, int cols, int ld)
{
    if (rows == 0 || cols == 0)
        return true;
    size_t last = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
    return p && on_device(p, last * sizeof(float));
}

bool operands_ok(const gemm_args &g)
{
    return operand_ok(g.a, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda) &&
           operand_ok(g.b, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb) &&
           operand_ok(g.c, g.m, g.n, g.ldc);
}

} // namespace

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    if (!h)
        return CUBLAS_STATUS_INVALID_VALUE;
    *h = handles.add(new frl_emu_blas);
    return CUBLAS_STATUS_SUCCESS;
}

// As the real one, it waits for the whole device first, which a capture forbids (the
// runtime's error is then the last error).
cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    if (!valid_handle(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (capture_forbids("cublasDestroy")) {
        fail(cudaErrorStreamCaptureUnsupported);
        return CUBLAS_STATUS_INTERNAL_ERROR;
    }
    handles.remove(h);
    run_all();
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    if (!valid_handle(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    if (!valid_handle(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->tf32 = mode == CUBLAS_TF32_TENSOR_OP_MATH;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *a, int lda,
                           const float *b, int ldb, const float *beta, float *c, int ldc)
{
    if (!valid_handle(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    frl_emu_stream *st = stream_of(h->stream);
    gemm_args g = {ta == CUBLAS_OP_T, tb == CUBLAS_OP_T, h->tf32, m, n, k, lda, ldb, ldc,
                   0.0f, 0.0f, a, b, c};
    int ar = g.ta ? k : m, br = g.tb ? n : k;
    if (!st || !alpha || !beta || m < 0 || n < 0 || k < 0 || lda < std::max(1, ar) ||
        ldb < std::max(1, br) || ldc < std::max(1, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0)
        return CUBLAS_STATUS_SUCCESS;
    // The checks above are cuBLAS's own, made before it touches the stream; an operand
    // outside device memory would be the product's fault on a GPU, so it ends a capture.
    if (!operands_ok(g)) {
        report("cublasSgemm %dx%dx%d: an operand is not whole in device memory", m, n, k);
        invalidate_capture(st);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    g.alpha = *alpha; // host pointer mode: read at the call, so a capture keeps the values
    g.beta = *beta;
    if (submit(st, graph_op{"cublasSgemm", [g] { return operands_ok(g); },
                            [g](op_fault &) { gemm(g); }}) != cudaSuccess)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}
