// A 128-bit fingerprint of a buffer of 32-bit words: the plain sum and the position-weighted sum,
// both modulo 2^64. Equal buffers give equal fingerprints; a flipped bit or two swapped words change
// them. Used to compare the result of identical work across GPUs and across repeats without copying
// it to the host.
extern "C" __global__ void checksum_words(const unsigned int* __restrict__ words, unsigned long long n,
                                          unsigned long long* out) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long plain = 0, weighted = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long w = words[i];
        plain += w;
        weighted += w * (i + 1);
    }
    atomicAdd(&out[0], plain);
    atomicAdd(&out[1], weighted);
}
