// moe-a2a device kernels, compiled at run time by NVRTC (CudaKernels) for the device's own
// architecture. No headers: bf16 is handled as raw 16-bit patterns, rounded exactly as the CPU
// path's DType.floatToBf16 (nearest even, NaN kept quiet), and sums use __fadd_rn/__fmul_rn so
// no multiply-add is fused: the results match the CPU path bit for bit.

__device__ __forceinline__ float bf16_to_float(unsigned short b) {
    return __uint_as_float(((unsigned int) b) << 16);
}

__device__ __forceinline__ unsigned short float_to_bf16(float f) {
    unsigned int bits = __float_as_uint(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return (unsigned short) ((bits >> 16) | 0x40u);
    }
    return (unsigned short) ((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// 16 bytes moved as one (plain C++ alignment, so no CUDA vector-type header is needed).
struct alignas(16) Chunk16 {
    unsigned int v[4];
};

// dst[r] = src[index[r]] for rows of rowBytes bytes: dispatch's pack (token rows in send order)
// and the grouping of received rows by local expert. One block per row.
extern "C" __global__ void gather_rows(const unsigned char* __restrict__ src, const int* __restrict__ index,
        unsigned char* __restrict__ dst, int rowBytes, int rows) {
    int r = blockIdx.x;
    if (r >= rows) {
        return;
    }
    const unsigned char* s = src + (long long) index[r] * rowBytes;
    unsigned char* d = dst + (long long) r * rowBytes;
    if ((rowBytes & 15) == 0) {
        const Chunk16* s4 = (const Chunk16*) s;
        Chunk16* d4 = (Chunk16*) d;
        for (int i = threadIdx.x; i < rowBytes / 16; i += blockDim.x) {
            d4[i] = s4[i];
        }
    } else {
        for (int i = threadIdx.x; i < rowBytes; i += blockDim.x) {
            d[i] = s[i];
        }
    }
}

// Combine, expert side: received token j's row = bf16(sum over its entries e in [start[j], start[j+1])
// of weight[e] * expertOut[row[e]]), entries in the order the CPU path adds them. One block per token.
extern "C" __global__ void weighted_sum_bf16(const float* __restrict__ expertOut, const int* __restrict__ start,
        const int* __restrict__ row, const float* __restrict__ weight, unsigned short* __restrict__ out,
        int hidden, int tokens) {
    int j = blockIdx.x;
    if (j >= tokens) {
        return;
    }
    int b = start[j];
    int e = start[j + 1];
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
        float acc = 0.0f;
        for (int i = b; i < e; i++) {
            acc = __fadd_rn(acc, __fmul_rn(weight[i], expertOut[(long long) row[i] * hidden + c]));
        }
        out[(long long) j * hidden + c] = float_to_bf16(acc);
    }
}

// Combine, source side: token t's output = the sum of its returned bf16 rows index[start[t]..start[t+1]),
// in rank order, the first one taken as is (as the CPU path does); 0 when none. One block per token.
extern "C" __global__ void accumulate_bf16(const unsigned short* __restrict__ rows, const int* __restrict__ start,
        const int* __restrict__ index, float* __restrict__ out, int hidden, int tokens) {
    int t = blockIdx.x;
    if (t >= tokens) {
        return;
    }
    int b = start[t];
    int e = start[t + 1];
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
        float acc = 0.0f;
        for (int i = b; i < e; i++) {
            float x = bf16_to_float(rows[(long long) index[i] * hidden + c]);
            acc = i == b ? x : __fadd_rn(acc, x);
        }
        out[(long long) t * hidden + c] = acc;
    }
}

// SwiGLU's middle: a = silu(g) * u, rounded to bf16 for the down projection's GEMM.
extern "C" __global__ void silu_mul_bf16(const float* __restrict__ gate, const float* __restrict__ up,
        unsigned short* __restrict__ out, long long n) {
    long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x;
    if (i < n) {
        float g = gate[i];
        out[i] = float_to_bf16(g / (1.0f + __expf(-g)) * up[i]);
    }
}

// bf16 → fp32, element-wise (an identity expert, and widening for checks).
extern "C" __global__ void bf16_to_fp32(const unsigned short* __restrict__ in, float* __restrict__ out, long long n) {
    long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = bf16_to_float(in[i]);
    }
}
