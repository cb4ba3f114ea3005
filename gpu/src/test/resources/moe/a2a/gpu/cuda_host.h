// kernels.cu on the host (HostLauncher): CUDA's qualifiers, built-in variables and intrinsics for
// g++ (-include cuda_host.h -x c++ kernels.cu). A launch runs its blocks one at a time, each on
// blockDim host threads, so a static is the running block's shared memory and __syncthreads a
// barrier of its threads. Float operations are IEEE single precision with no contraction
// (-ffp-contract=off), as NVRTC's --fmad=false; the _rn intrinsics return a GPU's canonical NaN;
// __expf stands in as expf.
#include <math.h>
#include <pthread.h>
#include <string.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __expf expf

struct host_uint3 {
    unsigned int x, y, z;
};

static thread_local host_uint3 threadIdx;
static thread_local host_uint3 blockIdx;
static thread_local host_uint3 blockDim;
static pthread_barrier_t block_barrier;
static bool block_barrier_made = false;

// Before a launch's threads start: the barrier __syncthreads waits on, for `threads` threads.
extern "C" void host_block_threads(int threads) {
    if (block_barrier_made) {
        pthread_barrier_destroy(&block_barrier);
    }
    pthread_barrier_init(&block_barrier, nullptr, (unsigned) threads);
    block_barrier_made = true;
}

// On the calling thread, before it runs its part of block `block`: its built-in variables.
extern "C" void host_enter(int block, int thread, int threads) {
    blockIdx = {(unsigned) block, 0, 0};
    threadIdx = {(unsigned) thread, 0, 0};
    blockDim = {(unsigned) threads, 1, 1};
}

static inline void __syncthreads() {
    pthread_barrier_wait(&block_barrier);
}

static inline float __uint_as_float(unsigned int u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

static inline unsigned int __float_as_uint(float f) {
    unsigned int u;
    memcpy(&u, &f, sizeof u);
    return u;
}

// A GPU's float arithmetic returns the canonical NaN, 0x7fffffff, where x86 keeps an operand's
// sign and payload: the intrinsics do as the GPU does (plain operators keep x86's NaN).
static inline float device_nan(float r) {
    return r != r ? __uint_as_float(0x7fffffffu) : r;
}

static inline float __fadd_rn(float a, float b) {
    return device_nan(a + b);
}

static inline float __fmul_rn(float a, float b) {
    return device_nan(a * b);
}

static inline float __fdiv_rn(float a, float b) {
    return device_nan(a / b);
}

// Atomics on memory the block's host threads share: real atomics, as on a device.
static inline unsigned int atomicOr(unsigned int* address, unsigned int value) {
    return __atomic_fetch_or(address, value, __ATOMIC_RELAXED);
}

static inline int atomicExch(int* address, int value) {
    return __atomic_exchange_n(address, value, __ATOMIC_RELAXED);
}

static inline int __popc(unsigned int v) {
    return __builtin_popcount(v);
}

static inline int min(int a, int b) {
    return a < b ? a : b;
}
