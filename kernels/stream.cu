// STREAM-style device memory bandwidth: copy and triad over float4 (16-byte vector loads and
// stores), grid-stride loops so any launch size covers the buffer. Bandwidth counts bytes read plus
// bytes written.
extern "C" __global__ void stream_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                       unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        dst[i] = src[i];
    }
}

extern "C" __global__ void stream_triad(const float4* __restrict__ b, const float4* __restrict__ c,
                                        float4* __restrict__ a, float scalar, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float4 x = b[i], y = c[i];
        a[i] = make_float4(x.x + scalar * y.x, x.y + scalar * y.y, x.z + scalar * y.z, x.w + scalar * y.w);
    }
}

// The same copy with UNROLL independent 16-byte loads in flight per thread before its stores
// (more memory-level parallelism per thread, for a grid of one wave of resident blocks): on an H100
// the one-load loop above reached 0.944 of a device-to-device copy (2026-11-27), CuPy's plain copy
// 1.00. Each warp's u-th load is one coalesced 512-byte run; the grid strides over chunks of
// gridDim.x * blockDim.x * UNROLL vectors, and the last chunk checks every index.
template <int UNROLL>
__device__ __forceinline__ void copy_unrolled(const float4* __restrict__ src, float4* __restrict__ dst,
                                              unsigned long long n) {
    const unsigned long long chunk = (unsigned long long)gridDim.x * blockDim.x * UNROLL;
    for (unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * UNROLL + threadIdx.x; base < n;
         base += chunk) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            unsigned long long i = base + (unsigned long long)u * blockDim.x;
            if (i < n) v[u] = src[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            unsigned long long i = base + (unsigned long long)u * blockDim.x;
            if (i < n) dst[i] = v[u];
        }
    }
}

extern "C" __global__ void stream_copy_x4(const float4* __restrict__ src, float4* __restrict__ dst,
                                          unsigned long long n) {
    copy_unrolled<4>(src, dst, n);
}

extern "C" __global__ void stream_copy_x8(const float4* __restrict__ src, float4* __restrict__ dst,
                                          unsigned long long n) {
    copy_unrolled<8>(src, dst, n);
}
