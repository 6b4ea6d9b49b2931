// Stream capture, CUDA graphs and mapped page-locked memory on the CUDA emulator
// (cuda_runtime.h), checked against the emulator alone: that a graph replays what was
// captured, on the inputs of each replay and only when the stream gets there; that the
// calls a capture refuses fail and invalidate it; that a replay faults on memory
// freed since the capture; and that kernels reach page-locked host memory but not
// pageable memory. The kernels are launched as unlaunch.py rewrites ops_cuda.cu's.
#include "cublas_v2.h"

#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

namespace {

int failures;

void expect(bool ok, const char *what, int line)
{
    if (!ok) {
        std::fprintf(stderr, "test_emu_graph.cc:%d: failed: %s\n", line, what);
        failures++;
    }
}

void expect_err(cudaError_t got, cudaError_t want, const char *call, int line)
{
    if (got != want) {
        std::fprintf(stderr, "test_emu_graph.cc:%d: %s gave %d (%s), expected %d (%s)\n", line,
                     call, (int)got, cudaGetErrorString(got), (int)want, cudaGetErrorString(want));
        failures++;
    }
}

#define EXPECT(cond) expect((cond), #cond, __LINE__)
#define EXPECT_ERR(call, want) expect_err((call), (want), #call, __LINE__)
// A call that must succeed.
#define OK(call) EXPECT_ERR(call, cudaSuccess)

constexpr int N = 300; // two blocks of 256 threads, the second partly idle

__global__ void affine(const float *x, float *y, float a, float b, int n)
{
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n)
        y[i] = a * x[i] + b;
}

void launch_affine(const float *x, float *y, float a, float b, cudaStream_t s)
{
    frl_emu::launch(affine, "affine", dim3((N + 255) / 256), dim3(256), 0, s)(x, y, a, b, N);
}

float *pinned(unsigned flags = cudaHostAllocDefault)
{
    void *p = nullptr;
    OK(cudaHostAlloc(&p, N * sizeof(float), flags));
    return (float *)p;
}

float *device()
{
    void *p = nullptr;
    OK(cudaMalloc(&p, N * sizeof(float)));
    return (float *)p;
}

void fill(float *p, float v0, float step)
{
    for (int i = 0; i < N; i++)
        p[i] = v0 + step * (float)i;
}

// Every element is a x[i] + b, the inputs being small integers, so exact.
bool holds(const float *y, const float *x, float a, float b)
{
    for (int i = 0; i < N; i++)
        if (y[i] != a * x[i] + b)
            return false;
    return true;
}

bool all(const float *y, float v)
{
    for (int i = 0; i < N; i++)
        if (y[i] != v)
            return false;
    return true;
}

cudaStreamCaptureStatus capture_status(cudaStream_t s)
{
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    OK(cudaStreamIsCapturing(s, &st));
    return st;
}

// A copy in from page-locked memory, two kernels, a copy out to page-locked memory:
// nothing runs at the capture; each of three replays reads the input as it is then;
// the output read before the stream's sync is the old one. Destroying the graph, and
// the exec with launches queued, leaves those launches to run.
void test_replay(cudaStream_t s)
{
    float *in = pinned(), *out = pinned(), *d1 = device(), *d2 = device();
    fill(in, 1, 1);
    fill(out, -1, 0);
    cudaGraph_t graph = nullptr;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(capture_status(s) == cudaStreamCaptureStatusActive);
    OK(cudaMemcpyAsync(d1, in, N * sizeof(float), cudaMemcpyHostToDevice, s));
    launch_affine(d1, d2, 2, 1, s);
    OK(cudaGetLastError());
    launch_affine(d2, d1, 3, 0, s);
    OK(cudaGetLastError());
    OK(cudaMemcpyAsync(out, d1, N * sizeof(float), cudaMemcpyDeviceToHost, s));
    OK(cudaStreamEndCapture(s, &graph));
    EXPECT(graph != nullptr);
    EXPECT(capture_status(s) == cudaStreamCaptureStatusNone);
    OK(cudaStreamSynchronize(s));
    EXPECT(all(out, -1)); // the capture ran nothing

    cudaGraphExec_t exec = nullptr;
    OK(cudaGraphInstantiate(&exec, graph, 0));
    OK(cudaGraphDestroy(graph)); // the exec does not need it
    for (int rep = 0; rep < 3; rep++) {
        std::vector<float> before(out, out + N);
        fill(in, (float)(100 * rep), (float)(rep + 1));
        OK(cudaGraphLaunch(exec, s));
        EXPECT(std::vector<float>(out, out + N) == before); // stale until the sync
        OK(cudaStreamSynchronize(s));
        EXPECT(holds(out, in, 6, 3)); // 3 (2 x + 1)
    }

    std::vector<float> before(out, out + N);
    fill(in, 7, 0);
    OK(cudaGraphLaunch(exec, s));
    OK(cudaGraphLaunch(exec, s));
    OK(cudaGraphExecDestroy(exec)); // with two launches queued
    EXPECT(std::vector<float>(out, out + N) == before);
    OK(cudaStreamSynchronize(s));
    EXPECT(all(out, 45));
    OK(cudaFreeHost(in));
    OK(cudaFreeHost(out));
    OK(cudaFree(d1));
    OK(cudaFree(d2));
}

// Work queued before the capture is not captured: it runs at the stream's next sync,
// and the graph's launch comes after it.
void test_capture_after_queued_work(cudaStream_t s)
{
    float *in = pinned(), *out = pinned(), *d1 = device(), *d2 = device();
    fill(in, 0, 2);
    fill(out, -1, 0);
    OK(cudaMemcpyAsync(d1, in, N * sizeof(float), cudaMemcpyHostToDevice, s));
    cudaGraph_t graph = nullptr;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    launch_affine(d1, d2, 1, 5, s);
    OK(cudaGetLastError());
    OK(cudaMemcpyAsync(out, d2, N * sizeof(float), cudaMemcpyDeviceToHost, s));
    OK(cudaStreamEndCapture(s, &graph));
    fill(in, -7, 0); // the queued copy has not read it yet
    OK(cudaStreamSynchronize(s));
    EXPECT(all(out, -1));
    cudaGraphExec_t exec = nullptr;
    OK(cudaGraphInstantiate(&exec, graph, 0));
    OK(cudaGraphLaunch(exec, s));
    OK(cudaStreamSynchronize(s));
    EXPECT(all(out, -2));
    OK(cudaGraphExecDestroy(exec));
    OK(cudaGraphDestroy(graph));
    OK(cudaFreeHost(in));
    OK(cudaFreeHost(out));
    OK(cudaFree(d1));
    OK(cudaFree(d2));
}

// A product on a handle bound to the capturing stream is captured, its scalars read at
// the call; cublasDestroy during a capture is refused.
void test_sgemm(cudaStream_t s)
{
    float *a = device(), *b = device(), *c = device(), *host = pinned();
    fill(host, 1, 1); // A = [1 3; 2 4], B = [5 7; 6 8], column-major
    OK(cudaMemcpyAsync(a, host, 4 * sizeof(float), cudaMemcpyHostToDevice, s));
    OK(cudaMemcpyAsync(b, host + 4, 4 * sizeof(float), cudaMemcpyHostToDevice, s));
    OK(cudaStreamSynchronize(s));
    cublasHandle_t h = nullptr;
    EXPECT(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    EXPECT(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS);
    float alpha = 1, beta = 0;
    cudaGraph_t graph = nullptr;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta, c, 2) ==
           CUBLAS_STATUS_SUCCESS);
    OK(cudaMemcpyAsync(host + 8, c, 4 * sizeof(float), cudaMemcpyDeviceToHost, s));
    OK(cudaStreamEndCapture(s, &graph));
    alpha = 100; // the graph keeps the 1 read at the call
    host[8] = -1;
    cudaGraphExec_t exec = nullptr;
    OK(cudaGraphInstantiate(&exec, graph, 0));
    OK(cudaGraphDestroy(graph));
    OK(cudaGraphLaunch(exec, s));
    EXPECT(host[8] == -1);
    OK(cudaStreamSynchronize(s));
    EXPECT(host[8] == 23 && host[9] == 34 && host[10] == 31 && host[11] == 46);

    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cublasDestroy(h) == CUBLAS_STATUS_INTERNAL_ERROR);
    EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    EXPECT_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
    EXPECT(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS); // the refused call left it alive
    OK(cudaGraphExecDestroy(exec));
    EXPECT(graph == nullptr);
    OK(cudaFree(a));
    OK(cudaFree(b));
    OK(cudaFree(c));
    OK(cudaFreeHost(host));
}

// Each call a capture refuses fails with cudaErrorStreamCaptureUnsupported and
// invalidates the capture: later work on the stream fails, the capture's end gives no
// graph, and what was captured before never runs. The refused calls do nothing.
void test_refused_during_capture(cudaStream_t s)
{
    float *in = pinned(), *out = pinned(), *d1 = device();
    std::vector<float> pageable(N, 1.0f);
    cudaEvent_t e = nullptr;
    OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    OK(cudaEventRecord(e, s));
    void *p = nullptr;
    const struct {
        const char *name;
        std::function<cudaError_t()> call;
    } cases[] = {
        {"cudaStreamSynchronize", [&] { return cudaStreamSynchronize(s); }},
        {"cudaMalloc", [&] { return cudaMalloc(&p, 64); }},
        {"cudaFree", [&] { return cudaFree(d1); }},
        {"cudaHostAlloc", [&] { return cudaHostAlloc(&p, 64, cudaHostAllocMapped); }},
        {"cudaFreeHost", [&] { return cudaFreeHost(in); }},
        {"a copy from pageable memory",
         [&] {
             return cudaMemcpyAsync(d1, pageable.data(), N * sizeof(float),
                                    cudaMemcpyHostToDevice, s);
         }},
        {"a copy to pageable memory",
         [&] {
             return cudaMemcpyAsync(pageable.data(), d1, N * sizeof(float),
                                    cudaMemcpyDeviceToHost, s);
         }},
        {"cudaEventRecord", [&] { return cudaEventRecord(e, s); }},
        {"cudaStreamWaitEvent", [&] { return cudaStreamWaitEvent(s, e, 0); }},
        {"cudaStreamDestroy", [&] { return cudaStreamDestroy(s); }},
    };
    for (const auto &c : cases) {
        std::fprintf(stderr, "(during a capture: %s)\n", c.name);
        fill(in, 5, 0);
        fill(out, -1, 0);
        cudaGraph_t graph = (cudaGraph_t)&p; // to be overwritten with NULL
        OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        OK(cudaMemcpyAsync(d1, in, N * sizeof(float), cudaMemcpyHostToDevice, s));
        OK(cudaMemcpyAsync(out, d1, N * sizeof(float), cudaMemcpyDeviceToHost, s));
        EXPECT_ERR(c.call(), cudaErrorStreamCaptureUnsupported);
        EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
        EXPECT(capture_status(s) == cudaStreamCaptureStatusInvalidated);
        launch_affine(d1, out, 1, 0, s);
        EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
        EXPECT_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
        EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
        EXPECT(graph == nullptr);
        EXPECT(capture_status(s) == cudaStreamCaptureStatusNone);
        OK(cudaStreamSynchronize(s));
        EXPECT(all(out, -1));
    }
    OK(cudaEventDestroy(e));
    OK(cudaFree(d1));
    OK(cudaFreeHost(in));
    OK(cudaFreeHost(out));
}

// A launch refused during a capture (its configuration, a pointer it cannot reach)
// invalidates the capture too.
void test_refused_launch_invalidates(cudaStream_t s)
{
    float *d1 = device(), *d2 = device();
    std::vector<float> pageable(N);
    cudaGraph_t graph = nullptr;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    frl_emu::launch(affine, "affine", dim3(1), dim3(2048), 0, s)(d1, d2, 1.0f, 0.0f, N);
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidConfiguration);
    EXPECT_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    launch_affine(pageable.data(), d2, 1, 0, s);
    EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
    EXPECT_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
    EXPECT(graph == nullptr);
    OK(cudaFree(d1));
    OK(cudaFree(d2));
}

// Memory freed after the capture: the replayed op faults, as the GPU's access would,
// and the fault is reported at the next sync (once).
void test_replay_after_free(cudaStream_t s)
{
    float *in = pinned(), *d1 = device(), *d2 = device();
    fill(in, 1, 0);
    cudaGraph_t kernel_graph = nullptr, copy_graph = nullptr;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    launch_affine(d1, d2, 1, 0, s);
    OK(cudaGetLastError());
    OK(cudaStreamEndCapture(s, &kernel_graph));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    OK(cudaMemcpyAsync(d1, in, N * sizeof(float), cudaMemcpyHostToDevice, s));
    OK(cudaStreamEndCapture(s, &copy_graph));
    cudaGraphExec_t kernel_exec = nullptr, copy_exec = nullptr;
    OK(cudaGraphInstantiate(&kernel_exec, kernel_graph, 0));
    OK(cudaGraphInstantiate(&copy_exec, copy_graph, 0));
    OK(cudaGraphLaunch(copy_exec, s));
    OK(cudaGraphLaunch(kernel_exec, s));
    OK(cudaStreamSynchronize(s)); // both live: both run

    OK(cudaFree(d2));
    OK(cudaGraphLaunch(kernel_exec, s)); // its checks come when the stream gets there
    EXPECT_ERR(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
    EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
    OK(cudaStreamSynchronize(s));

    OK(cudaFreeHost(in));
    OK(cudaGraphLaunch(copy_exec, s));
    EXPECT_ERR(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
    EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);

    OK(cudaGraphExecDestroy(kernel_exec));
    OK(cudaGraphExecDestroy(copy_exec));
    OK(cudaGraphDestroy(kernel_graph));
    OK(cudaGraphDestroy(copy_graph));
    OK(cudaFree(d1));
}

// Page-locked memory, mapped or not (unified addressing), is reached by kernels at the
// host's address, when the stream gets there; pageable memory is refused.
void test_mapped_memory(cudaStream_t s)
{
    float *in = pinned(cudaHostAllocMapped), *out = pinned(cudaHostAllocDefault);
    float *wc = pinned(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined);
    fill(in, 0, 3);
    fill(out, -1, 0);
    launch_affine(in, out, 2, -1, s);
    OK(cudaGetLastError());
    EXPECT(all(out, -1));
    OK(cudaStreamSynchronize(s));
    EXPECT(holds(out, in, 2, -1));
    launch_affine(out, wc, 1, 1, s);
    OK(cudaGetLastError());
    OK(cudaStreamSynchronize(s));
    EXPECT(holds(wc, out, 1, 1));

    std::vector<float> pageable(N, 4.0f);
    fill(out, -1, 0);
    launch_affine(pageable.data(), out, 1, 0, s);
    EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
    launch_affine(in, pageable.data(), 1, 0, s);
    EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
    OK(cudaStreamSynchronize(s));
    EXPECT(all(out, -1) && all(pageable.data(), 4));

    void *p = nullptr;
    EXPECT_ERR(cudaHostAlloc(&p, 64, 0x100), cudaErrorInvalidValue);
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    OK(cudaFreeHost(in));
    OK(cudaFreeHost(out));
    OK(cudaFreeHost(wc));
}

void test_host_get_device_pointer()
{
    float *h = pinned(cudaHostAllocMapped), *d = device();
    std::vector<float> pageable(N);
    void *p = nullptr;
    OK(cudaHostGetDevicePointer(&p, h, 0));
    EXPECT(p == h);
    OK(cudaHostGetDevicePointer(&p, h + 10, 0)); // inside the allocation
    EXPECT(p == h + 10);
    EXPECT_ERR(cudaHostGetDevicePointer(&p, pageable.data(), 0), cudaErrorInvalidValue);
    EXPECT_ERR(cudaHostGetDevicePointer(&p, d, 0), cudaErrorInvalidValue);
    EXPECT_ERR(cudaHostGetDevicePointer(&p, h, 1), cudaErrorInvalidValue);
    EXPECT_ERR(cudaHostGetDevicePointer(nullptr, h, 0), cudaErrorInvalidValue);
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    OK(cudaFreeHost(h));
    EXPECT_ERR(cudaHostGetDevicePointer(&p, h, 0), cudaErrorInvalidValue); // freed
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    OK(cudaFree(d));
}

// The modes: a Global capture forbids cudaMalloc to every thread, a ThreadLocal one to
// its own thread only, a Relaxed one to none; a capture not Relaxed ends in its thread.
void test_capture_modes(cudaStream_t s)
{
    auto malloc_elsewhere = [] {
        cudaError_t e = cudaErrorLaunchFailure; // overwritten by the thread
        std::thread t([&e] {
            void *p = nullptr;
            e = cudaMalloc(&p, 64);
            if (e == cudaSuccess)
                e = cudaFree(p);
        });
        t.join();
        return e;
    };
    cudaGraph_t graph = nullptr;
    void *p = nullptr;

    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT_ERR(malloc_elsewhere(), cudaErrorStreamCaptureUnsupported);
    EXPECT(capture_status(s) == cudaStreamCaptureStatusInvalidated);
    EXPECT_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);

    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    OK(malloc_elsewhere());
    EXPECT(capture_status(s) == cudaStreamCaptureStatusActive);
    cudaError_t e = cudaErrorLaunchFailure;
    std::thread([&] { e = cudaStreamEndCapture(s, &graph); }).join();
    EXPECT_ERR(e, cudaErrorStreamCaptureWrongThread);
    EXPECT(capture_status(s) == cudaStreamCaptureStatusActive);
    EXPECT_ERR(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
    EXPECT_ERR(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_ERR(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);

    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    OK(cudaMalloc(&p, 64));
    OK(cudaFree(p));
    std::thread([&] { e = cudaStreamEndCapture(s, &graph); }).join();
    OK(e);
    OK(cudaGraphDestroy(graph));
}

// Misuse of the capture and graph calls: errors, never crashes.
void test_misuse(cudaStream_t s)
{
    int foreign = 0; // an address that is no handle
    cudaGraph_t graph = (cudaGraph_t)&foreign;
    EXPECT_ERR(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState); // no capture begun
    EXPECT(graph == nullptr);
    EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalState);
    EXPECT_ERR(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
               cudaErrorStreamCaptureUnsupported); // the legacy stream
    EXPECT_ERR(cudaStreamBeginCapture(s, (cudaStreamCaptureMode)7), cudaErrorInvalidValue);
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT_ERR(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    OK(cudaStreamEndCapture(s, &graph)); // an empty graph, which does nothing
    cudaGraphExec_t exec = nullptr;
    OK(cudaGraphInstantiate(&exec, graph, 0));
    OK(cudaGraphLaunch(exec, s));
    OK(cudaStreamSynchronize(s));
    OK(cudaGraphExecDestroy(exec));
    OK(cudaGraphDestroy(graph));
    EXPECT_ERR(cudaGraphDestroy(graph), cudaErrorInvalidResourceHandle);
    EXPECT_ERR(cudaGraphInstantiate(&exec, graph, 0), cudaErrorInvalidResourceHandle);
    EXPECT(exec == nullptr);
    EXPECT_ERR(cudaGraphLaunch((cudaGraphExec_t)&foreign, s), cudaErrorInvalidResourceHandle);
    EXPECT_ERR(cudaGraphExecDestroy((cudaGraphExec_t)&foreign), cudaErrorInvalidResourceHandle);
    cudaStreamCaptureStatus status;
    EXPECT_ERR(cudaStreamIsCapturing(s, nullptr), cudaErrorInvalidValue);
    EXPECT_ERR(cudaStreamIsCapturing((cudaStream_t)&foreign, &status),
               cudaErrorInvalidResourceHandle);
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

} // namespace

int main()
{
    cudaStream_t s = nullptr;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const std::function<void()> tests[] = {
        [s] { test_replay(s); },
        [s] { test_capture_after_queued_work(s); },
        [s] { test_sgemm(s); },
        [s] { test_refused_during_capture(s); },
        [s] { test_refused_launch_invalidates(s); },
        [s] { test_replay_after_free(s); },
        [s] { test_mapped_memory(s); },
        [] { test_host_get_device_pointer(); },
        [s] { test_capture_modes(s); },
        [s] { test_misuse(s); },
    };
    for (const auto &t : tests) {
        t();
        OK(cudaGetLastError()); // each test has checked the errors it made
    }
    OK(cudaStreamDestroy(s));
    if (failures) {
        std::fprintf(stderr, "test_emu_graph: %d checks failed\n", failures);
        return 1;
    }
    std::printf("test_emu_graph: all checks passed\n");
    return 0;
}
