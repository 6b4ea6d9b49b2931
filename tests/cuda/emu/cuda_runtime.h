// A CPU stand-in for the part of the CUDA runtime that lib/cuda/ops_cuda.cu uses, so
// that its kernels and host code run, and are tested, on machines without a GPU.
//
// ops_cuda.cu is compiled unchanged as C++ against this header (and cublas_v2.h beside
// it), after unlaunch.py has turned each `k<<<grid, block, shmem, stream>>>(args)` into
// `frl_emu::launch(k, grid, block, shmem, stream)(args)`. What the emulator checks that
// a plain host build would not (emu.cc says how):
//   - each thread of a block runs as its own fiber, so __syncthreads is a real barrier
//     and a barrier that only some threads reach is reported;
//   - work queued on a stream runs when the stream is synchronised, waited on through an
//     event, or freed under, not when it is queued: a result read before its sync, or
//     across streams without an event, is stale;
//   - pointers handed to kernels, copies and products must lie in device memory (or
//     host memory, by the copy's kind), whole; a kernel may also be handed page-locked
//     host memory (cudaHostAlloc's, mapped as with unified addressing, whatever the
//     flags), which it reads and writes when the stream gets there, never pageable;
//   - while a stream captures, its work is recorded, not run; the calls a capture
//     refuses (synchronising or destroying the stream, allocating or freeing memory,
//     copies of pageable memory; and events on the stream, which a real capture follows
//     across streams but this one does not) fail and invalidate the capture, as does a
//     launch that fails its checks; a graph's replay checks again the memory each op
//     uses, so memory freed since the capture faults, reported at the next sync;
//   - launch configurations are checked against the limits of a real device;
//   - the products round their factors to TensorFloat-32 when the handle asks for it.
// Under AddressSanitizer the kernels' out-of-bounds accesses are caught as on the host
// (a stand-in for compute-sanitizer memcheck). It does not model timing, warps, or the
// precision of the GPU's own math functions.
//
// The fault knobs of tests/cuda/ops_host.c work here too (FAKE_CUDA=nodevice,
// FAKE_CUDA_FAIL_SYNC=n, FAKE_CUDA_NO_PINNED=1, FAKE_CUDA_NO_EVENTS=1), so the real
// error paths of ops_cuda.cu run in the tests.
#ifndef FRL_CUDA_EMU_RUNTIME_H
#define FRL_CUDA_EMU_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <tuple>
#include <utility>

#define CUDART_VERSION 13000

// Device code is plain C++ here. One grid runs at a time (emu.cc), its blocks one after
// another, so shared memory and the thread's coordinates can be plain statics.
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
    unsigned x, y, z;
};
struct uint4 {
    unsigned x, y, z, w;
};

extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
void __syncthreads(void);
// A warp shuffle, as a block-wide exchange (the emulator has no warps): every thread of
// the block must make the same call, or it is the divergent barrier it then contains.
float __shfl_xor_sync(unsigned mask, float v, int lane_mask);

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchFailure = 719,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureWrongThread = 908,
    // the emulator's injected faults (the knobs above), each with its own sentence
    cudaErrorEmuInjectedSync = 10001,
    cudaErrorEmuNoPinned = 10002,
    cudaErrorEmuNoEvents = 10003,
};

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
};

enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2,
};

enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2,
};

struct frl_emu_stream;
struct frl_emu_event;
struct frl_emu_graph;
struct frl_emu_graph_exec;
typedef frl_emu_stream *cudaStream_t;
typedef frl_emu_event *cudaEvent_t;
typedef frl_emu_graph *cudaGraph_t;
typedef frl_emu_graph_exec *cudaGraphExec_t;

#define cudaStreamNonBlocking 0x01u
#define cudaEventDisableTiming 0x02u
#define cudaHostAllocDefault 0x00u
#define cudaHostAllocPortable 0x01u
#define cudaHostAllocMapped 0x02u
#define cudaHostAllocWriteCombined 0x04u

struct cudaDeviceProp {
    char name[256];
    int major, minor;
    size_t totalGlobalMem;
};

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t s);
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned flags);

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

// ---- launches ----

namespace frl_emu {

// A launch's arguments, converted to the kernel's parameter types at the launch as a
// call would, then kept until the stream reaches the launch, and as long as a graph
// that captured the launch can replay it.
struct work {
    virtual void run() = 0;
    // False (each reason printed) when a pointer argument is not memory a kernel can use.
    virtual bool pointers_ok(const char *kernel) const = 0;
    virtual ~work() {}
};

// Queues w to run as every thread of every block of the configuration when the stream
// gets there, or records it in the stream's capture; invalid pointers, configuration or
// stream are the launch's error.
void launch_work(const char *kernel, dim3 grid, dim3 block, size_t shmem, cudaStream_t s,
                 std::shared_ptr<work> w);

// False (and the reason printed) when a pointer argument is neither device memory nor
// page-locked host memory.
bool device_arg(const void *p, const char *kernel, int index);

template <typename T> bool arg_ok(const T &, const char *, int)
{
    return true;
}
template <typename T> bool arg_ok(T *p, const char *kernel, int index)
{
    return p == nullptr || device_arg((const void *)p, kernel, index);
}

template <typename... P> struct kernel_work final : work {
    void (*k)(P...);
    std::tuple<P...> args;
    template <typename... A>
    kernel_work(void (*k_)(P...), A &&...a) : k(k_), args(static_cast<P>(std::forward<A>(a))...)
    {
    }
    void run() override { std::apply(k, args); }
    bool pointers_ok(const char *name) const override
    {
        return std::apply(
            [name](const P &...p) {
                int i = 0;
                bool ok = true;
                ((ok = arg_ok(p, name, i++) && ok), ...); // left to right: every one reported
                return ok;
            },
            args);
    }
};

template <typename... P> struct launcher {
    void (*k)(P...);
    const char *name;
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
    template <typename... A> void operator()(A &&...a) const
    {
        launch_work(name, grid, block, shmem, stream,
                    std::make_shared<kernel_work<P...>>(k, std::forward<A>(a)...));
    }
};

template <typename... P>
launcher<P...> launch(void (*k)(P...), const char *name, dim3 grid, dim3 block, size_t shmem = 0,
                      cudaStream_t stream = nullptr)
{
    return launcher<P...>{k, name, grid, block, shmem, stream};
}

} // namespace frl_emu

#endif
