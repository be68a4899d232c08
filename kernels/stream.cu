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
