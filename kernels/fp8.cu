// float32 -> e4m3fn bit patterns (FP8: sign, 4 exponent bits of bias 7, 3 mantissa bits; no infinity,
// 0x7F/0xFF are NaN), rounded to nearest even and saturated to +-448, NaN -> 0x7F: the same encoding as
// nodeqc.backends.cublaslt.e4m3_bits and CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3).
// One kernel for the fp8 burn's random operands: CuPy's elementwise version is a dozen kernels, which
// a node that never ran nodeqc compiles first (3.17 s of the fp8 set-up on an H100, 2026-11-27, against
// 0.03 s once compiled). e4m3_of is host code too: tests/test_kernels.py compiles it for the host with
// nvcc and holds it, value by value, to e4m3_bits. No includes: NVRTC declares the math functions.
__host__ __device__ inline unsigned char e4m3_of(float x) {
    if (x != x) return 0x7F;  // NaN, whatever its sign
    const unsigned int sign = copysignf(1.0f, x) < 0.0f ? 0x80u : 0u;
    const float a = fminf(fabsf(x), 448.0f);  // saturated: the largest finite e4m3
    int e;
    frexpf(a, &e);  // a = f 2^e with f in [0.5, 1): the binade is 2^(e-1)
    const int binade = e - 1 > -6 ? e - 1 : -6;  // subnormals share the lowest normal binade's step
    const int steps = (int)rintf(ldexpf(a, 3 - binade));  // 8..16 in a normal binade, 0..8 below
    const int carry = steps >= 16 ? 1 : 0;  // rounded up into the next binade
    const int normal = steps >= 8 ? 1 : 0;
    const int exponent = normal ? binade + 7 + carry : 0;
    const int mantissa = carry ? 0 : (normal ? steps - 8 : steps);
    return (unsigned char)(sign | (unsigned int)(exponent << 3) | (unsigned int)mantissa);
}

extern "C" __global__ void e4m3_encode(const float* __restrict__ x, unsigned char* __restrict__ out,
                                       unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = e4m3_of(x[i]);
    }
}
