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

// fp16 as raw 16-bit patterns, as the CPU row kernels' ScalarKernels.floatToFp16 / fp16ToFloat:
// nearest even, magnitudes from 65520 up (infinities too) to infinity, a NaN made quiet with its
// payload's top bits.
__device__ __forceinline__ unsigned short float_to_fp16(float f) {
    unsigned int bits = __float_as_uint(f);
    unsigned int sign = (bits >> 16) & 0x8000u;
    unsigned int a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return (unsigned short) (sign | 0x7e00u | ((a & 0x7fffffu) >> 13));
    }
    if (a >= 0x477ff000u) {
        return (unsigned short) (sign | 0x7c00u);
    }
    if (a < 0x38800000u) {
        // subnormal codes are multiples of 2^-24: the product is exact, rintf rounds half even
        return (unsigned short) (sign | (unsigned int) rintf(__fmul_rn(__uint_as_float(a), 16777216.0f)));
    }
    unsigned int h = ((((a >> 23) - 112u) << 10) | ((a & 0x7fffffu) >> 13));
    unsigned int rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) {
        h++;
    }
    return (unsigned short) (sign | h);
}

__device__ __forceinline__ float fp16_to_float(unsigned short h) {
    unsigned int sign = ((unsigned int) (h & 0x8000u)) << 16;
    unsigned int m = h & 0x7fffu;
    if (m >= 0x7c00u) {
        return __uint_as_float(sign | (m == 0x7c00u ? 0x7f800000u : 0x7fc00000u | ((m & 0x3ffu) << 13)));
    }
    if (m >= 0x400u) {
        return __uint_as_float(sign | ((m << 13) + 0x38000000u));
    }
    // subnormal: m * 2^-24, exact
    return __uint_as_float(sign | __float_as_uint(__fmul_rn((float) m, 5.9604644775390625e-8f)));
}

// A token row's element type, as CudaKernels passes it: DType's bf16, fp16 and fp32.
#define DTYPE_BF16 0
#define DTYPE_FP16 1
#define DTYPE_FP32 2

__device__ __forceinline__ float load_elem(const unsigned char* row, long long i, int dtype) {
    if (dtype == DTYPE_FP32) {
        return ((const float*) row)[i];
    }
    unsigned short b = ((const unsigned short*) row)[i];
    return dtype == DTYPE_FP16 ? fp16_to_float(b) : bf16_to_float(b);
}

__device__ __forceinline__ void store_elem(unsigned char* row, long long i, float v, int dtype) {
    if (dtype == DTYPE_FP32) {
        ((float*) row)[i] = v;
    } else {
        ((unsigned short*) row)[i] = dtype == DTYPE_FP16 ? float_to_fp16(v) : float_to_bf16(v);
    }
}

// 16 bytes moved as one (plain C++ alignment, so no CUDA vector-type header is needed).
struct alignas(16) Chunk16 {
    unsigned int v[4];
};

// dst[r] = src[index[r]] for rows of rowBytes bytes: dispatch's pack (token rows in send order)
// and the grouping of received rows by local expert. A warp per row, blockDim.x / 32 rows a block,
// so every row's copy starts in the first wave of blocks; a lane keeps four 16-byte loads in flight
// before it stores them (a block a row kept one a thread, in many waves of short blocks). 16 bytes
// at a time when both buffers are 16-byte aligned and a row is whole chunks, else bytes.
extern "C" __global__ void gather_rows(const unsigned char* __restrict__ src, const int* __restrict__ index,
        unsigned char* __restrict__ dst, int rowBytes, int rows) {
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) {
        return;
    }
    const unsigned char* s = src + (long long) index[r] * rowBytes;
    unsigned char* d = dst + (long long) r * rowBytes;
    if ((rowBytes & 15) == 0 && ((((unsigned long long) src) | ((unsigned long long) dst)) & 15ull) == 0) {
        const Chunk16* s4 = (const Chunk16*) s;
        Chunk16* d4 = (Chunk16*) d;
        int n = rowBytes / 16;
        int i = lane;
        for (; i + 96 < n; i += 128) {
            Chunk16 c0 = s4[i];
            Chunk16 c1 = s4[i + 32];
            Chunk16 c2 = s4[i + 64];
            Chunk16 c3 = s4[i + 96];
            d4[i] = c0;
            d4[i + 32] = c1;
            d4[i + 64] = c2;
            d4[i + 96] = c3;
        }
        for (; i < n; i += 32) {
            d4[i] = s4[i];
        }
    } else {
        for (int i = lane; i < rowBytes; i += 32) {
            d[i] = s[i];
        }
    }
}

// Combine, expert side: received token j's row = the sum over its entries e in [start[j], start[j+1])
// of weight[e] * expertOut[row[e]], entries in the order the CPU path adds them, written in the
// step's dtype. One block per token.
extern "C" __global__ void weighted_sum(const float* __restrict__ expertOut, const int* __restrict__ start,
        const int* __restrict__ row, const float* __restrict__ weight, unsigned char* __restrict__ out,
        int hidden, int tokens, int dtype) {
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
        store_elem(out, (long long) j * hidden + c, acc, dtype);
    }
}

// Element j of 8 two-byte elements moved as one 16-byte chunk (little-endian: element 0 is the low
// half of v[0]).
__device__ __forceinline__ float chunk_half(const Chunk16& c, int j, int dtype) {
    unsigned short h = (unsigned short) (c.v[j / 2] >> (16 * (j % 2)));
    return dtype == DTYPE_FP16 ? fp16_to_float(h) : bf16_to_float(h);
}

// accumulate's sums, 16 bytes of each returned row at a time: channels [W * v, W * v + W) a thread
// (W = 8 two-byte or 4 fp32 channels), so a warp loads 512 bytes an instruction where the scalar
// loop loads 64 of bf16; the sums are the scalar loop's, in the same order.
template <int W>
__device__ void accumulate_chunks(const unsigned char* __restrict__ rows, const int* __restrict__ index,
        int b, int e, float* __restrict__ outRow, int hidden, int dtype) {
    for (int v = threadIdx.x; v < hidden / W; v += blockDim.x) {
        float acc[W];
        for (int j = 0; j < W; j++) {
            acc[j] = 0.0f;
        }
        for (int i = b; i < e; i++) {
            Chunk16 c = ((const Chunk16*) (rows + (long long) index[i] * hidden * (16 / W)))[v];
            for (int j = 0; j < W; j++) {
                float x;
                if constexpr (W == 4) {
                    x = __uint_as_float(c.v[j]);
                } else {
                    x = chunk_half(c, j, dtype);
                }
                acc[j] = i == b ? x : __fadd_rn(acc[j], x);
            }
        }
        Chunk16* o = (Chunk16*) (outRow + (long long) v * W);
        for (int q = 0; q < W / 4; q++) {
            Chunk16 r;
            for (int k = 0; k < 4; k++) {
                r.v[k] = __float_as_uint(acc[q * 4 + k]);
            }
            o[q] = r;
        }
    }
}

// Combine, source side: token t's output = the sum of its returned rows (in the step's dtype)
// index[start[t]..start[t+1]), in rank order, the first one taken as is (as the CPU path does); 0
// when none. One block per token; 16 bytes of a row at a time when both buffers are 16-byte aligned
// and a row is whole chunks.
extern "C" __global__ void accumulate(const unsigned char* __restrict__ rows, const int* __restrict__ start,
        const int* __restrict__ index, float* __restrict__ out, int hidden, int tokens, int dtype) {
    int t = blockIdx.x;
    if (t >= tokens) {
        return;
    }
    int b = start[t];
    int e = start[t + 1];
    float* outRow = out + (long long) t * hidden;
    int width = dtype == DTYPE_FP32 ? 4 : 8;
    if (((((unsigned long long) rows) | ((unsigned long long) out)) & 15ull) == 0 && hidden % width == 0) {
        if (width == 4) {
            accumulate_chunks<4>(rows, index, b, e, outRow, hidden, dtype);
        } else {
            accumulate_chunks<8>(rows, index, b, e, outRow, hidden, dtype);
        }
        return;
    }
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
        float acc = 0.0f;
        for (int i = b; i < e; i++) {
            float x = load_elem(rows, (long long) index[i] * hidden + c, dtype);
            acc = i == b ? x : __fadd_rn(acc, x);
        }
        outRow[c] = acc;
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

// SwiGLU's middle in fp32, for the fp32 GEMMs of fp16 and fp32 steps.
extern "C" __global__ void silu_mul_fp32(const float* __restrict__ gate, const float* __restrict__ up,
        float* __restrict__ out, long long n) {
    long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x;
    if (i < n) {
        float g = gate[i];
        out[i] = g / (1.0f + __expf(-g)) * up[i];
    }
}

// dst row r = fp32 of row index[r] (row r when index is null) of src, rows in the step's dtype: the
// grouping by local expert of fp16 and fp32 steps, whose experts run fp32 GEMMs. One block per row.
extern "C" __global__ void widen_rows(const unsigned char* __restrict__ src, const int* __restrict__ index,
        float* __restrict__ dst, int hidden, int rows, int dtype) {
    int r = blockIdx.x;
    if (r >= rows) {
        return;
    }
    long long from = (long long) (index == 0 ? r : index[r]) * hidden;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
        dst[(long long) r * hidden + c] = load_elem(src, from + c, dtype);
    }
}

// bf16 → fp32, element-wise (an identity expert, and widening for checks).
extern "C" __global__ void bf16_to_fp32(const unsigned short* __restrict__ in, float* __restrict__ out, long long n) {
    long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = bf16_to_float(in[i]);
    }
}

// Exclusive prefix sum of v over the block's threads (at most 1024; buf holds one int each), the
// block's sum in *total. Every thread of the block calls it.
__device__ int block_exclusive_scan(int v, int* buf, int* total) {
    int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int add = t >= off ? buf[t - off] : 0;
        __syncthreads();
        buf[t] += add;
        __syncthreads();
    }
    int inclusive = buf[t];
    *total = buf[blockDim.x - 1];
    __syncthreads();
    return inclusive - v;
}

// Header field i (little-endian int) at h: one load where it is 4-byte aligned, else four byte loads
// (region rows of an odd number of 2-byte channels, or FP8 rows of a hidden size not a multiple of 4,
// leave a header on any byte).
__device__ __forceinline__ int header_int(const unsigned char* h, int i) {
    const unsigned char* p = h + 4 * i;
    if ((((unsigned long long) p) & 3ull) == 0) {
        return *(const int*) p;
    }
    return (int) ((unsigned int) p[0] | ((unsigned int) p[1] << 8) | ((unsigned int) p[2] << 16)
            | ((unsigned int) p[3] << 24));
}

// Slots ll_group places at a time (its shared memory: a bit per slot and row of a chunk).
#define LL_WINDOW 128

// Low-latency grouping, read from the region headers that arrived with the rows, so that a captured
// step needs no host round trip. Received row i = s * bound + r (source s, slot r) is valid when
// r < s's count. Local slot e's rows sit at e * rows.. (rows = sources * bound, the most a slot can
// get when a token's experts are distinct) in receive order: groupIndex names each one's row of the
// receive buffer (row 0 for the unused places). Row i's combine entries [start[i], start[i+1]) are
// its local choices by ascending slot, as the CPU path adds them: entryRow (grouped place) and
// entryWeight. received[s] = s's count, or -1 where s's header is malformed (a count outside
// 0..bound, a slot outside -1..slots-1, or a slot twice in a row): such a region is grouped as
// empty, so no list names a place past the buffers, and the host fails the step. One block.
extern "C" __global__ void ll_group(const unsigned char* __restrict__ recv, long long regionBytes,
        long long headerOffset, int regionRows, int sources, int bound, int k, int slots,
        int* __restrict__ groupIndex, int* __restrict__ start, int* __restrict__ entryRow,
        float* __restrict__ entryWeight, int* __restrict__ received) {
    __shared__ int buf[1024];
    const int rows = sources * bound;
    for (int p = threadIdx.x; p < slots * rows; p += blockDim.x) {
        groupIndex[p] = 0;
    }
    for (int s = threadIdx.x; s < sources; s += blockDim.x) {
        int count = header_int(recv + s * regionBytes + headerOffset, 0);
        received[s] = count >= 0 && count <= bound ? count : -1;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < rows; i += blockDim.x) {
        const unsigned char* h = recv + (i / bound) * regionBytes + headerOffset;
        int r = i % bound;
        // another thread may be flagging this source meanwhile: a stale count only checks more
        if (r < ((volatile int*) received)[i / bound]) {
            bool bad = false;
            for (int q = 0; q < k; q++) {
                int slot = header_int(h, 1 + r * k + q);
                bad |= slot < -1 || slot >= slots;
                for (int p = 0; p < q; p++) {
                    bad |= slot >= 0 && header_int(h, 1 + r * k + p) == slot;
                }
            }
            if (bad) {
                atomicExch(&received[i / bound], -1);
            }
        }
    }
    __syncthreads();
    int carry = 0;
    for (int base = 0; base < rows; base += blockDim.x) {
        int i = base + threadIdx.x;
        int n = 0;
        if (i < rows) {
            const unsigned char* h = recv + (i / bound) * regionBytes + headerOffset;
            int r = i % bound;
            if (r < received[i / bound]) {
                for (int q = 0; q < k; q++) {
                    n += header_int(h, 1 + r * k + q) >= 0 ? 1 : 0;
                }
            }
        }
        int total;
        int first = block_exclusive_scan(n, buf, &total);
        if (i < rows) {
            start[i] = carry + first;
        }
        carry += total;
    }
    if (threadIdx.x == 0) {
        start[rows] = carry;
    }
    // Each slot's places in receive order, a chunk of blockDim rows at a time: a bit per row of
    // the chunk and slot (of a window of LL_WINDOW slots), so a choice's place is its slot's
    // count before the chunk plus the bits below its row's. A few barriers a chunk, where a scan
    // per slot would take two per step of it.
    __shared__ unsigned int bits[LL_WINDOW * 32];
    __shared__ int taken[LL_WINDOW];
    const int warps = (blockDim.x + 31) / 32;
    const int warp = threadIdx.x / 32;
    const unsigned int lane = threadIdx.x % 32;
    for (int e0 = 0; e0 < slots; e0 += LL_WINDOW) {
        const int window = min(LL_WINDOW, slots - e0);
        for (int w = threadIdx.x; w < window; w += blockDim.x) {
            taken[w] = 0;
        }
        for (int base = 0; base < rows; base += blockDim.x) {
            for (int w = threadIdx.x; w < window * warps; w += blockDim.x) {
                bits[w] = 0;
            }
            __syncthreads();
            const int i = base + threadIdx.x;
            const unsigned char* h = recv + (i / bound) * regionBytes + headerOffset;
            const int r = i % bound;
            const bool valid = i < rows && r < received[i / bound];
            for (int q = 0; valid && q < k; q++) {
                int e = header_int(h, 1 + r * k + q) - e0;
                if (e >= 0 && e < window) {
                    atomicOr(&bits[e * warps + warp], 1u << lane);
                }
            }
            __syncthreads();
            for (int q = 0; valid && q < k; q++) {
                int slot = header_int(h, 1 + r * k + q);
                int e = slot - e0;
                if (e < 0 || e >= window) {
                    continue;
                }
                int pos = taken[e] + __popc(bits[e * warps + warp] & ((1u << lane) - 1u));
                for (int w = 0; w < warp; w++) {
                    pos += __popc(bits[e * warps + w]);
                }
                int before = 0;
                for (int p = 0; p < k; p++) {
                    int other = header_int(h, 1 + r * k + p);
                    before += other >= 0 && other < slot ? 1 : 0;
                }
                groupIndex[slot * rows + pos] = (i / bound) * regionRows + r;
                entryRow[start[i] + before] = slot * rows + pos;
                entryWeight[start[i] + before] = __int_as_float(header_int(h, 1 + bound * k + r * k + q));
            }
            __syncthreads();
            for (int w = threadIdx.x; w < window; w += blockDim.x) {
                for (int v = 0; v < warps; v++) {
                    taken[w] += __popc(bits[w * warps + v]);
                }
            }
            __syncthreads();
        }
    }
}

// FP8 dispatch (E4M3 codes, then one fp32 scale per block of 128 channels: the CPU path's
// Fp8RowLayout), bit for bit as RowKernels.quantizeFp8FromBf16 and dequantizeFp8 compute it.

// x as E4M3 (OCP fn): nearest even, magnitudes over 448 (infinities too) saturate to 448, NaN
// gives S.1111.111, the sign of zero kept.
__device__ __forceinline__ unsigned char float_to_e4m3(float x) {
    unsigned int bits = __float_as_uint(x);
    unsigned int sign = (bits >> 24) & 0x80u;
    float a = fabsf(x);
    if (a != a) {
        return (unsigned char) (sign | 0x7fu);
    }
    float c = fminf(a, 448.0f);
    if (c < 0.015625f) {
        // subnormal codes are multiples of 2^-9: the product is exact, rintf rounds half even
        return (unsigned char) (sign | (unsigned int) rintf(__fmul_rn(c, 512.0f)));
    }
    unsigned int cb = __float_as_uint(c);
    int exponent = (int) (cb >> 23) - 127;
    unsigned int mantissa = cb & 0x7fffffu;
    unsigned int rounded = mantissa >> 20;
    unsigned int rest = mantissa & 0xfffffu;
    if (rest > 0x80000u || (rest == 0x80000u && (rounded & 1u) == 1u)) {
        rounded++;
    }
    return (unsigned char) (sign | ((unsigned int) ((exponent + 7) << 3) + rounded));
}

// The value of E4M3 code q: its exponent and mantissa placed in fp32's, times 2^120, exactly;
// NaN codes give a quiet NaN with the code's sign.
__device__ __forceinline__ float e4m3_to_float(unsigned char q) {
    unsigned int magnitude = q & 0x7fu;
    unsigned int sign = ((unsigned int) (q & 0x80u)) << 24;
    if (magnitude == 0x7fu) {
        return __uint_as_float(sign | 0x7fc00000u);
    }
    float value = __fmul_rn(__uint_as_float(magnitude << 20), __uint_as_float(0x7b800000u));
    return __uint_as_float(__float_as_uint(value) | sign);
}

// dst row r = the FP8 row of row index[r] of src (in the step's dtype): dispatch's pack and
// quantization in one.
// One block per row; each warp takes one scale block of 128 channels at a time (4 a lane), so every
// thread works and a block's barriers are shared by as many scale blocks as it has warps. A scale
// block's largest finite magnitude (at least 1e-4) gives the multiplier 448 / amax and the scale
// amax / 448. blockDim is a multiple of 32.
extern "C" __global__ void quantize_fp8_rows(const unsigned char* __restrict__ src,
        const int* __restrict__ index, unsigned char* __restrict__ dst, int hidden, int rows, int dtype) {
    __shared__ float amax[1024];
    int r = blockIdx.x;
    if (r >= rows) {
        return;
    }
    long long s = (long long) index[r] * hidden;
    int blocks = (hidden + 127) / 128;
    unsigned char* d = dst + (long long) r * (hidden + 4 * blocks);
    const int warps = blockDim.x / 32;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    for (int b0 = 0; b0 < blocks; b0 += warps) {
        int b = b0 + warp;
        int start = b * 128;
        int len = b < blocks ? min(128, hidden - start) : 0;
        float m = 0.0f;
        for (int i = lane; i < len; i += 32) {
            float a = fabsf(load_elem(src, s + start + i, dtype));
            if (a > m && a < __int_as_float(0x7f800000)) {
                m = a;
            }
        }
        amax[threadIdx.x] = m;
        __syncthreads();
        for (int half = 16; half > 0; half >>= 1) {
            if (lane < half) {
                amax[threadIdx.x] = fmaxf(amax[threadIdx.x], amax[threadIdx.x + half]);
            }
            __syncthreads();
        }
        float blockMax = fmaxf(amax[warp * 32], 1e-4f);
        __syncthreads();
        float multiplier = __fdiv_rn(448.0f, blockMax);
        for (int i = lane; i < len; i += 32) {
            float v = load_elem(src, s + start + i, dtype);
            // a NaN's code keeps its sign, as on the CPU: a GPU's product of a NaN is the canonical
            // NaN, whose sign is +
            d[start + i] = v != v ? (unsigned char) (((__float_as_uint(v) >> 24) & 0x80u) | 0x7fu)
                    : float_to_e4m3(__fmul_rn(v, multiplier));
        }
        if (lane == 0 && b < blocks) {
            float scale = __fdiv_rn(blockMax, 448.0f);
            unsigned int bits = __float_as_uint(scale);
            unsigned char* at = d + hidden + 4 * b;
            at[0] = (unsigned char) bits;
            at[1] = (unsigned char) (bits >> 8);
            at[2] = (unsigned char) (bits >> 16);
            at[3] = (unsigned char) (bits >> 24);
        }
    }
}

// dst row r = the FP8 row index[r] of src, each value code * its block's scale (a NaN code its own
// NaN), in dtype: the grouping of received FP8 rows by local expert, as bf16 for the bf16 experts
// or fp32 for the fp32 ones. One block per row.
extern "C" __global__ void dequantize_fp8_rows(const unsigned char* __restrict__ src,
        const int* __restrict__ index, unsigned char* __restrict__ dst, int hidden, int rows, int dtype) {
    int r = blockIdx.x;
    if (r >= rows) {
        return;
    }
    int blocks = (hidden + 127) / 128;
    const unsigned char* s = src + (long long) index[r] * (hidden + 4 * blocks);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        const unsigned char* at = s + hidden + 4 * (i / 128);
        float scale = __uint_as_float((unsigned int) at[0] | ((unsigned int) at[1] << 8)
                | ((unsigned int) at[2] << 16) | ((unsigned int) at[3] << 24));
        unsigned char q = s[i];
        float value = (q & 0x7fu) == 0x7fu ? e4m3_to_float(q) : __fmul_rn(e4m3_to_float(q), scale);
        store_elem(dst, (long long) r * hidden + i, value, dtype);
    }
}

// An expert's projection held in FP8 as the checkpoint stores it, for its GEMM: out[r][c] = code
// [r][c]'s value times its block x block tile's scale (an fp32 product; a NaN code its own NaN),
// rounded to bf16 as a GPU rank holding bf16 rounds it, in dtype (bf16 for the bf16 GEMMs, fp32 for
// the fp32 ones): bit for bit the weights the CPU path dequantizes (E4m3.dequantize) as the bf16
// copy holds them, so both holdings compute alike in every dtype. One block per row.
extern "C" __global__ void fp8_weights(const unsigned char* __restrict__ codes,
        const float* __restrict__ scales, unsigned char* __restrict__ out, int rows, int cols, int block,
        int dtype) {
    int r = blockIdx.x;
    if (r >= rows) {
        return;
    }
    const float* tiles = scales + (long long) (r / block) * ((cols + block - 1) / block);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        long long i = (long long) r * cols + c;
        unsigned char q = codes[i];
        float value = (q & 0x7fu) == 0x7fu ? e4m3_to_float(q) : __fmul_rn(e4m3_to_float(q), tiles[c / block]);
        store_elem(out, i, bf16_to_float(float_to_bf16(value)), dtype);
    }
}

// A layer's shared expert into the combined output: out[t] += s[t], or, with a gate (Qwen2-MoE),
// out[t] += sigmoid(gate · x[t]) * s[t], the dot product over the token (in the step's dtype) in
// double. One block per token.
extern "C" __global__ void add_shared(const float* __restrict__ shared, const unsigned char* __restrict__ x,
        const float* __restrict__ gate, float* __restrict__ out, int hidden, int tokens, int dtype) {
    __shared__ double partial[256];
    int t = blockIdx.x;
    if (t >= tokens) {
        return;
    }
    float scale = 1.0f;
    if (gate != 0) {
        double g = 0.0;
        for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
            g += (double) gate[c] * (double) load_elem(x, (long long) t * hidden + c, dtype);
        }
        partial[threadIdx.x] = g;
        __syncthreads();
        for (int half = blockDim.x / 2; half > 0; half >>= 1) {
            if (threadIdx.x < half) {
                partial[threadIdx.x] += partial[threadIdx.x + half];
            }
            __syncthreads();
        }
        scale = (float) (1.0 / (1.0 + exp(-partial[0])));
    }
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
        long long i = (long long) t * hidden + c;
        out[i] = __fadd_rn(out[i], __fmul_rn(scale, shared[i]));
    }
}
