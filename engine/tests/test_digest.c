/*
 * test_digest.c — XXH3-64 and XXH64: known answers, every stripe kernel
 * against the portable one, streaming and the fused copy against one-shot,
 * the text form, and digests of strided tensors (zc_digest_tensor and the
 * put's copy) against the digest of the canonical bytes.
 *
 * The Python suite checks the same functions against the reference
 * implementation (the xxhash package) on every length 0..4096, random
 * inputs and sizes up to 64 MiB, once per kernel (tests/python/test_digest.py);
 * the known answers here are values of that package, so that the Windows
 * build under wine, where no Python runs, is checked against it too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "digest/xxh3_internal.h"

#define SEED_A 0x9e3779b97f4a7c15ULL

static uint64_t next64(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ULL; /* splitmix64 */
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* XXH3-64 of fixture_fill(n, 7) with seed, from python-xxhash's xxh3_64_intdigest:
 * one input per length class and the class boundaries. */
static const struct {
    size_t len;
    uint64_t seed;
    uint64_t digest;
} known[] = {
    {0u, 0x0000000000000000ULL, 0x2d06800538d394c2ULL},
    {1u, 0x0000000000000000ULL, 0xb59060455a04877cULL},
    {3u, 0x0000000000000000ULL, 0x59829e05171f9a5dULL},
    {4u, 0x0000000000000000ULL, 0xb8c95dcf022949f5ULL},
    {8u, 0x0000000000000000ULL, 0xf5c58b7bb1483d1fULL},
    {9u, 0x0000000000000000ULL, 0x7f44186e0b435304ULL},
    {16u, 0x0000000000000000ULL, 0x0aab10030ac0b322ULL},
    {17u, 0x0000000000000000ULL, 0x751b04f56e9de693ULL},
    {128u, 0x0000000000000000ULL, 0x2a93641679a78cc9ULL},
    {129u, 0x0000000000000000ULL, 0xc444c76f7d50d328ULL},
    {240u, 0x0000000000000000ULL, 0x3e2114b9b076eb89ULL},
    {241u, 0x0000000000000000ULL, 0xb4d36c702dded4e3ULL},
    {1024u, 0x0000000000000000ULL, 0x8855a56e58c3337bULL},
    {1025u, 0x0000000000000000ULL, 0x59494f7f9d2d705aULL},
    {2111u, 0x0000000000000000ULL, 0x78c081525af184d5ULL},
    {1048577u, 0x0000000000000000ULL, 0x28d22a0ebb365103ULL},
    {0u, SEED_A, 0x602b0e2cd6662c8bULL},
    {5u, SEED_A, 0xe712af6933582d58ULL},
    {200u, SEED_A, 0x4971b74d7422a257ULL},
    {4097u, SEED_A, 0x3a7a380a072371e9ULL},
};
#define KNOWN_MAX_LEN 1048577u

static const char *const kernel_names[] = {"scalar", "sse2", "avx2", "avx512"};

TEST(xxh3_known_answers_with_every_kernel)
{
    uint8_t *data = malloc(KNOWN_MAX_LEN);
    REQUIRE(data != NULL);
    fixture_fill(data, KNOWN_MAX_LEN, 7);
    int kernels = 0;
    for (size_t k = 0; k < sizeof kernel_names / sizeof kernel_names[0]; k++) {
        const zc_xxh3_impl *impl = zc__xxh3_kernel_named(kernel_names[k]);
        if (impl == NULL)
            continue;
        kernels++;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
            uint64_t got = zc__xxh3_64_with(impl, data, known[i].len, known[i].seed);
            if (got != known[i].digest)
                fprintf(stderr, "  %s: length %zu seed %llx: got %016llx\n", impl->name,
                        known[i].len, (unsigned long long)known[i].seed, (unsigned long long)got);
            CHECK(got == known[i].digest);
        }
    }
    CHECK(kernels >= 1);
    /* The public entry point uses the active kernel. */
    CHECK(zc_xxh3_64(data, 1025, 0) == 0x59494f7f9d2d705aULL);
    CHECK(zc_xxh3_64(NULL, 0, 0) == 0x2d06800538d394c2ULL);
    /* XXH64 keeps its own known answer (python-xxhash's xxh64_intdigest). */
    CHECK(zc_xxh64(data, 1000, 0) == 0xe62949e23576bf70ULL);
    free(data);
}

/* Every length 0..4096 at every offset class, big sizes and seeds: the
 * kernel called name gives what the portable kernel gives. */
static void check_kernel_matches_scalar(const char *name)
{
    const zc_xxh3_impl *impl = zc__xxh3_kernel_named(name);
    if (impl == NULL)
        SKIP("this CPU (or this build) cannot run the kernel");
    const size_t max = (size_t)3 << 20;
    uint8_t *data = malloc(max + 64);
    uint8_t *d1 = malloc(max + 64), *d2 = malloc(max + 64);
    REQUIRE(data != NULL && d1 != NULL && d2 != NULL);
    fixture_fill(data, max + 64, 11);
    uint64_t rng = 5;
    for (size_t len = 0; len <= 4096; len++) {
        size_t off = len % 17; /* unaligned inputs too */
        uint64_t seed = (len % 3 == 0) ? 0 : next64(&rng);
        uint64_t want = zc__xxh3_64_with(&zc__xxh3_scalar, data + off, len, seed);
        CHECK(zc__xxh3_64_with(impl, data + off, len, seed) == want);
        if (seed == 0) {
            CHECK(zc__xxh3_copy_with(impl, d1 + (len % 5), data + off, len) == want);
            CHECK(memcmp(d1 + (len % 5), data + off, len) == 0);
        }
    }
    static const size_t big[] = {1023 * 1024 + 1, 1u << 20, (1u << 20) + 63, (3u << 20) - 1,
                                 (size_t)3 << 20};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        uint64_t want = zc__xxh3_64_with(&zc__xxh3_scalar, data + 3, big[i], 0);
        CHECK(zc__xxh3_64_with(impl, data + 3, big[i], 0) == want);
        CHECK(zc__xxh3_64_with(impl, data, big[i], SEED_A) ==
              zc__xxh3_64_with(&zc__xxh3_scalar, data, big[i], SEED_A));
        memset(d2, 0, max);
        CHECK(zc__xxh3_copy_with(impl, d2, data + 3, big[i]) == want);
        CHECK(memcmp(d2, data + 3, big[i]) == 0);
    }
    free(data);
    free(d1);
    free(d2);
    /* Copies past ZC_XXH3_STREAM_MIN take the streaming-store loop when the
     * destination is 32-byte aligned (host buffers are 64-byte aligned; 32
     * past that is aligned for AVX2's streaming stores, not for AVX-512's)
     * and the plain one otherwise. */
    const size_t huge = ZC_XXH3_STREAM_MIN + 4099;
    uint8_t *src = zc__host_alloc(huge + 64), *dst = zc__host_alloc(huge + 64);
    REQUIRE(src != NULL && dst != NULL);
    fixture_fill(src, huge + 64, 13);
    static const size_t shifts[] = {0, 1, 32};
    for (size_t i = 0; i < sizeof shifts / sizeof shifts[0]; i++) {
        size_t shift = shifts[i];
        uint64_t want = zc__xxh3_64_with(&zc__xxh3_scalar, src + 5, huge, 0);
        memset(dst, 0, huge + 64);
        CHECK(zc__xxh3_copy_with(impl, dst + shift, src + 5, huge) == want);
        CHECK(memcmp(dst + shift, src + 5, huge) == 0);
    }
    zc__host_free(src);
    zc__host_free(dst);
}

TEST(xxh3_scalar_kernel_copies_past_the_streaming_size)
{
    check_kernel_matches_scalar("scalar");
}

TEST(xxh3_sse2_kernel_matches_scalar)
{
    check_kernel_matches_scalar("sse2");
}

TEST(xxh3_avx2_kernel_matches_scalar)
{
    check_kernel_matches_scalar("avx2");
}

TEST(xxh3_avx512_kernel_matches_scalar)
{
    check_kernel_matches_scalar("avx512");
}

TEST(xxh3_scalar_kernel_is_always_there_and_the_active_one_is_named)
{
    CHECK(zc__xxh3_kernel_named("scalar") == &zc__xxh3_scalar);
    CHECK(zc__xxh3_kernel_named("neon") == NULL && zc__xxh3_kernel_named(NULL) == NULL);
    const char *active = zc_xxh3_kernel();
    REQUIRE(active != NULL);
    CHECK(zc__xxh3_kernel_named(active) == zc__xxh3_active());
    printf("  (XXH3 kernel in use: %s)\n", active);
}

/* Streaming in pieces of every shape gives the one-shot digest, with every
 * kernel: pieces of 1 byte, across the 256-byte buffer, whole blocks, and
 * a digest taken mid-way that does not disturb the state; and the copying
 * update (the strided put's) gives the same digest and an exact copy. */
TEST(xxh3_streaming_equals_one_shot)
{
    const size_t max = 70000;
    uint8_t *data = malloc(max), *copy = malloc(max);
    REQUIRE(data != NULL && copy != NULL);
    fixture_fill(data, max, 3);
    uint64_t rng = 99;
    for (size_t k = 0; k < sizeof kernel_names / sizeof kernel_names[0]; k++) {
        const zc_xxh3_impl *impl = zc__xxh3_kernel_named(kernel_names[k]);
        if (impl == NULL)
            continue;
        for (int round = 0; round < 400; round++) {
            size_t len = round < 300 ? (size_t)round * 7 : (size_t)(next64(&rng) % max);
            uint64_t seed = round % 4 == 0 ? next64(&rng) : 0;
            uint64_t want = zc__xxh3_64_with(&zc__xxh3_scalar, data, len, seed);
            zc_xxh3_state st, sc; /* sc: the copying update, into copy */
            zc_xxh3_reset(&st, seed);
            zc_xxh3_reset(&sc, seed);
            memset(copy, 0, max);
            size_t done = 0;
            while (done < len) {
                size_t piece;
                switch (next64(&rng) % 4) {
                case 0:
                    piece = 1;
                    break;
                case 1:
                    piece = (size_t)(next64(&rng) % 300);
                    break;
                case 2:
                    piece = 1024 * (size_t)(1 + next64(&rng) % 3);
                    break;
                default:
                    piece = (size_t)(next64(&rng) % 5000);
                    break;
                }
                if (piece > len - done)
                    piece = len - done;
                zc__xxh3_update_with(impl, &st, data + done, piece);
                zc__xxh3_update_copy(impl, &sc, copy + done, data + done, piece);
                done += piece;
                if (next64(&rng) % 8 == 0) /* digest mid-way: must not disturb the state */
                    CHECK(zc_xxh3_digest(&st) ==
                          zc__xxh3_64_with(&zc__xxh3_scalar, data, done, seed));
            }
            CHECK(zc_xxh3_digest(&st) == want);
            CHECK(zc_xxh3_digest(&sc) == want);
            CHECK(memcmp(copy, data, len) == 0);
        }
    }
    zc_xxh3_state st;
    zc_xxh3_reset(&st, 0);
    zc_xxh3_update(&st, NULL, 0);
    CHECK(zc_xxh3_digest(&st) == zc_xxh3_64(NULL, 0, 0));
    free(data);
    free(copy);
}

TEST(xxh64_streaming_equals_one_shot)
{
    uint8_t data[3000];
    fixture_fill(data, sizeof data, 1);
    for (size_t len = 0; len < sizeof data; len += 37) {
        zc_xxh64_state st;
        zc_xxh64_reset(&st, 5);
        for (size_t done = 0; done < len;) {
            size_t piece = (done % 45) + 1;
            if (piece > len - done)
                piece = len - done;
            zc_xxh64_update(&st, data + done, piece);
            done += piece;
        }
        CHECK(zc_xxh64_digest(&st) == zc_xxh64(data, len, 5));
    }
}

TEST(mul128_fold_portable_equals_int128)
{
#if ZC_HAVE_INT128
    uint64_t rng = 1;
    static const uint64_t edge[] = {0, 1, 0xFFFFFFFFu, 0x100000000ULL, UINT64_MAX,
                                    0x8000000000000000ULL};
    for (size_t i = 0; i < 6; i++)
        for (size_t j = 0; j < 6; j++)
            CHECK(zc__mul128_fold64_portable(edge[i], edge[j]) ==
                  zc__mul128_fold64(edge[i], edge[j]));
    for (int i = 0; i < 100000; i++) {
        uint64_t a = next64(&rng), b = next64(&rng);
        CHECK(zc__mul128_fold64_portable(a, b) == zc__mul128_fold64(a, b));
    }
#else
    SKIP("this compiler has no 128-bit integer to compare with");
#endif
}

TEST(digest_text_round_trips_and_refuses_malformed_text)
{
    char text[ZC_DIGEST_TEXT_SIZE];
    int algo = -1;
    uint64_t d = 0;
    CHECK_OK(zc_digest_format(ZC_DIGEST_XXH3_64, 0x0123456789abcdefULL, text, sizeof text));
    CHECK(strcmp(text, "xxh3:0123456789abcdef") == 0);
    CHECK_OK(zc_digest_parse(text, &algo, &d));
    CHECK(algo == ZC_DIGEST_XXH3_64 && d == 0x0123456789abcdefULL);
    CHECK_OK(zc_digest_format(ZC_DIGEST_XXH64, UINT64_MAX, text, sizeof text));
    CHECK(strcmp(text, "xxh64:ffffffffffffffff") == 0);
    CHECK_OK(zc_digest_parse("xxh64:FFFFFFFFFFFFFFFF", &algo, &d));
    CHECK(algo == ZC_DIGEST_XXH64 && d == UINT64_MAX);
    CHECK(zc_digest_format(ZC_DIGEST_NONE, 1, text, sizeof text) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "algorithm 0 is unknown") != NULL);
    CHECK(zc_digest_format(ZC_DIGEST_XXH3_64, 1, text, 10) == ZC_E_INVALID);
    static const char *const bad[] = {
        "", "xxh3", "xxh3:", "xxh3:0123456789abcde", "xxh3:0123456789abcdef0",
        "xxh3:0123456789abcdeg", "xxh3 0123456789abcdef", "XXH3:0123456789abcdef",
        "xxh32:0123456789abcdef", "sha256:0123456789abcdef", "xxh64:-123456789abcdef",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(zc_digest_parse(bad[i], &algo, &d) == ZC_E_INVALID);
        CHECK(strstr(zc_last_error(), "is not \"xxh3:\" or \"xxh64:\"") != NULL);
    }
    CHECK(zc_digest_parse(NULL, &algo, &d) == ZC_E_INVALID);
    CHECK(strcmp(zc_digest_algo_name(ZC_DIGEST_XXH3_64), "xxh3") == 0);
    CHECK(strcmp(zc_digest_algo_name(ZC_DIGEST_XXH64), "xxh64") == 0);
    CHECK(zc_digest_algo_name(ZC_DIGEST_NONE) == NULL && zc_digest_algo_name(7) == NULL);
    uint8_t bytes[100];
    fixture_fill(bytes, sizeof bytes, 2);
    CHECK_OK(zc_digest_bytes(ZC_DIGEST_XXH3_64, bytes, sizeof bytes, &d));
    CHECK(d == zc_xxh3_64(bytes, sizeof bytes, 0));
    CHECK_OK(zc_digest_bytes(ZC_DIGEST_XXH64, bytes, sizeof bytes, &d));
    CHECK(d == zc_xxh64(bytes, sizeof bytes, 0));
    CHECK(zc_digest_bytes(9, bytes, sizeof bytes, &d) == ZC_E_INVALID);
    CHECK(zc_digest_bytes(ZC_DIGEST_XXH3_64, NULL, 1, &d) == ZC_E_INVALID);
}

/* ---- strided tensors ---- */

/* A DLPack description of a strided view (element strides) over base. */
typedef struct {
    zc_dl_tensor dl;
    int64_t shape[ZC_MAX_RANK];
    int64_t strides[ZC_MAX_RANK];
} view_desc;

static void make_view(view_desc *v, void *base, int bits, int ndim, const int64_t *shape,
                      const int64_t *strides, uint64_t byte_offset)
{
    memset(v, 0, sizeof *v);
    v->dl.data = base;
    v->dl.byte_offset = byte_offset;
    v->dl.device.device_type = ZC_DL_CPU;
    v->dl.ndim = ndim;
    v->dl.dtype.code = ZC_DL_UINT;
    v->dl.dtype.bits = (uint8_t)bits;
    v->dl.dtype.lanes = 1;
    if (bits == 16 || bits == 32 || bits == 64)
        v->dl.dtype.code = ZC_DL_INT;
    if (bits == 8)
        v->dl.dtype.code = ZC_DL_UINT;
    for (int i = 0; i < ndim; i++) {
        v->shape[i] = shape[i];
        v->strides[i] = strides ? strides[i] : 0;
    }
    v->dl.shape = v->shape;
    v->dl.strides = strides ? v->strides : NULL;
}

/* The canonical bytes of a view, gathered the slow obvious way. */
static size_t canonical(const view_desc *v, uint8_t *out)
{
    size_t elem = (size_t)v->dl.dtype.bits / 8, n = 1;
    for (int i = 0; i < v->dl.ndim; i++)
        n *= (size_t)v->shape[i];
    const uint8_t *base = (const uint8_t *)v->dl.data + v->dl.byte_offset;
    for (size_t flat = 0; flat < n; flat++) {
        size_t rest = flat, off = 0;
        for (int d = v->dl.ndim - 1; d >= 0; d--) {
            size_t idx = rest % (size_t)v->shape[d];
            rest /= (size_t)v->shape[d];
            int64_t st = v->dl.strides ? v->strides[d] : 0;
            if (v->dl.strides == NULL) { /* contiguous */
                size_t inner = 1;
                for (int e = d + 1; e < v->dl.ndim; e++)
                    inner *= (size_t)v->shape[e];
                st = (int64_t)inner;
            }
            off += idx * (size_t)st * elem;
        }
        memcpy(out + flat * elem, base + off, elem);
    }
    return n * elem;
}

/* The view's digest three ways — zc_digest_tensor (in place), the put's
 * copy (zc_bundle_add_copy) and one-shot over the canonical bytes — agree,
 * and the copy holds exactly the canonical bytes. */
static void check_view(const view_desc *v, uint8_t *scratch)
{
    size_t n = canonical(v, scratch);
    uint64_t want = zc_xxh3_64(n ? scratch : NULL, n, 0), got = 0;
    CHECK_OK(zc_digest_tensor(&v->dl, &got));
    CHECK(got == want);
    zc_bundle *b = NULL;
    REQUIRE_OK(zc_bundle_create(&b));
    CHECK_OK(zc_bundle_add_copy(b, "t", &v->dl));
    if (b->count == 1) {
        const zc_tensor *t = &b->tensors[0];
        CHECK(t->nbytes == n && t->digest == want && t->digest_algo == ZC_DIGEST_XXH3_64);
        CHECK(n == 0 || memcmp(t->host, scratch, n) == 0);
    }
    zc_bundle_free(b);
}

TEST(strided_digest_equals_digest_of_canonical_bytes)
{
    const size_t cap = (size_t)4 << 20;
    uint8_t *base = malloc(cap), *scratch = malloc(cap);
    REQUIRE(base != NULL && scratch != NULL);
    fixture_fill(base, cap, 21);
    view_desc v;
    for (int bits = 8; bits <= 64; bits *= 2) {
        /* contiguous, with and without explicit strides */
        int64_t s1[3] = {40, 30, 20};
        make_view(&v, base, bits, 3, s1, NULL, 0);
        check_view(&v, scratch);
        int64_t c1[3] = {600, 20, 1};
        make_view(&v, base, bits, 3, s1, c1, (uint64_t)bits);
        check_view(&v, scratch);
        /* transposed: strided innermost dimension */
        int64_t tr[3] = {1, 20, 600};
        int64_t ts[3] = {20, 30, 40};
        make_view(&v, base, bits, 3, ts, tr, 0);
        check_view(&v, scratch);
        /* a tail slice along an outer axis: long contiguous runs */
        int64_t sl_shape[4] = {2, 16, 3, 500};
        int64_t sl_str[4] = {16 * 21 * 500, 21 * 500, 500, 1};
        make_view(&v, base, bits, 4, sl_shape, sl_str, (uint64_t)(18 * 500 * (bits / 8)));
        check_view(&v, scratch);
        /* every other element of a row (stride 2), a column (stride 100) */
        int64_t ev_shape[2] = {300, 700};
        int64_t ev_str[2] = {1500, 2};
        make_view(&v, base, bits, 2, ev_shape, ev_str, 0);
        check_view(&v, scratch);
        int64_t col_shape[1] = {3000};
        int64_t col_str[1] = {100};
        make_view(&v, base, bits, 1, col_shape, col_str, 8);
        check_view(&v, scratch);
        /* broadcast (stride 0) dimensions, size-1 dimensions with odd strides */
        int64_t bc_shape[4] = {3, 1, 4, 5};
        int64_t bc_str[4] = {0, 12345, 5, 1};
        make_view(&v, base, bits, 4, bc_shape, bc_str, 0);
        check_view(&v, scratch);
        int64_t bc2_shape[3] = {7, 9, 11};
        int64_t bc2_str[3] = {0, 0, 0};
        make_view(&v, base, bits, 3, bc2_shape, bc2_str, 0);
        check_view(&v, scratch);
        /* rank 0, and an empty tensor */
        make_view(&v, base, bits, 0, NULL, NULL, 16);
        check_view(&v, scratch);
        int64_t empty_shape[2] = {4, 0};
        int64_t empty_str[2] = {7, 3};
        make_view(&v, base, bits, 2, empty_shape, empty_str, 0);
        check_view(&v, scratch);
    }
    /* a large permuted view (rows of 3 elements, 8 dims) */
    int64_t big_shape[8] = {2, 3, 2, 5, 4, 3, 7, 3};
    int64_t big_str[8] = {1, 2, 6, 12, 60, 240, 720, 5040};
    make_view(&v, base, 32, 8, big_shape, big_str, 0);
    check_view(&v, scratch);
    free(base);
    free(scratch);
}

TEST(digest_tensor_refuses_bad_input)
{
    uint64_t d = 0;
    float x[4] = {1, 2, 3, 4};
    fixture_tensor ft;
    int64_t shape[1] = {4};
    fixture_f32(&ft, x, 1, shape);
    CHECK(zc_digest_tensor(NULL, &d) == ZC_E_INVALID);
    CHECK(zc_digest_tensor(&ft.dl, NULL) == ZC_E_INVALID);
    CHECK_OK(zc_digest_tensor(&ft.dl, &d));
    CHECK(d == zc_xxh3_64(x, sizeof x, 0));
    ft.dl.device.device_type = ZC_DL_CUDA;
    CHECK(zc_digest_tensor(&ft.dl, &d) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "device type 2") != NULL);
    ft.dl.device.device_type = ZC_DL_CPU;
    ft.dl.data = NULL;
    CHECK(zc_digest_tensor(&ft.dl, &d) == ZC_E_INVALID);
    ft.dl.data = x;
    int64_t neg[1] = {-1};
    ft.dl.strides = neg;
    CHECK(zc_digest_tensor(&ft.dl, &d) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "negative stride") != NULL);
    ft.dl.strides = NULL;
    ft.dl.ndim = ZC_MAX_RANK + 1;
    CHECK(zc_digest_tensor(&ft.dl, &d) == ZC_E_INVALID);
    ft.dl.ndim = 1;
    ft.dl.dtype.lanes = 4;
    CHECK(zc_digest_tensor(&ft.dl, &d) == ZC_E_INVALID);
}
