// Device memory pattern test over 64-bit words. Each check kernel compares every word with what the
// pattern says it must hold and logs mismatches: a running count, and the first MAX_RECORDS records
// (word index, expected, actual) for the report. Patterns:
//   fill/check      a constant (all zeros, all ones, checkerboards)
//   address         each word holds its own index XOR a mask (catches address aliasing)
//   random          each word holds splitmix64(index ^ seed), or its complement (data-dependent faults)
//   invert          moving inversions: check the pattern, write its complement, in ascending or
//                   descending order within each thread's share
//   modulo          every 20th word (from an offset) holds `value`, the others its complement
//                   (cuda_memtest's modulo-20 test: interference from neighbours 20 words apart)
//   block           splitmix64((index mod 2^k) ^ value): the same in every block of 2^k words, so a
//                   block copied 2^k words away still holds what the pattern says (the block-move test)
// The kind is one int: the low byte picks the pattern, bits 8-15 carry the modulo test's offset or
// the block pattern's k.
struct ErrorRecord {
    unsigned long long index;
    unsigned long long expected;
    unsigned long long actual;
};

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

#define MODULO 20ULL

// kind & 0xff: 0 constant `value`, 1 own index ^ value, 2 splitmix64(index ^ value), 3 its complement,
// 4 modulo-20 (offset kind >> 8), 5 block pattern (block of 2^(kind >> 8) words)
__device__ __forceinline__ unsigned long long expected_word(int kind, unsigned long long i, unsigned long long value) {
    switch (kind & 0xff) {
        case 0: return value;
        case 1: return i ^ value;
        case 2: return splitmix64(i ^ value);
        case 3: return ~splitmix64(i ^ value);
        case 4: return (i % MODULO == (unsigned long long)((kind >> 8) & 0xff)) ? value : ~value;
        default: return splitmix64((i & ((1ULL << ((kind >> 8) & 0x3f)) - 1ULL)) ^ value);
    }
}

__device__ __forceinline__ void log_error(unsigned long long* count, ErrorRecord* records, unsigned int max_records,
                                          unsigned long long i, unsigned long long want, unsigned long long got) {
    unsigned long long k = atomicAdd(count, 1ULL);
    if (k < max_records) {
        records[k].index = i;
        records[k].expected = want;
        records[k].actual = got;
    }
}

extern "C" __global__ void mt_write(unsigned long long* buf, unsigned long long n, int kind, unsigned long long value) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        buf[i] = expected_word(kind, i, value);
    }
}

extern "C" __global__ void mt_check(const unsigned long long* buf, unsigned long long n, int kind, unsigned long long value,
                                    unsigned long long* count, ErrorRecord* records, unsigned int max_records) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long want = expected_word(kind, i, value), got = buf[i];
        if (got != want) log_error(count, records, max_records, i, want, got);
    }
}

// Moving inversions: check each word holds the pattern, then write its complement. `descending`
// walks each thread's share from the top down, so both orders of neighbouring accesses are tried.
extern "C" __global__ void mt_invert(unsigned long long* buf, unsigned long long n, int kind, unsigned long long value,
                                     int descending, unsigned long long* count, ErrorRecord* records,
                                     unsigned int max_records) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (first >= n) return;
    unsigned long long steps = (n - 1 - first) / stride + 1;
    for (unsigned long long s = 0; s < steps; ++s) {
        unsigned long long i = first + (descending ? (steps - 1 - s) : s) * stride;
        unsigned long long want = expected_word(kind, i, value), got = buf[i];
        if (got != want) log_error(count, records, max_records, i, want, got);
        buf[i] = ~want;
    }
}
