/* sdk: SHA-256 (FIPS 180-4 §6.2) of a buffer, a stream or an fd, declared in cordon/sdk/fs.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cordon/sdk/fs.h>

#define READ_CHUNK (64u * 1024u)

/* First 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* Process one 64-byte block (§6.2.2). */
static void sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, hh;

    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);

        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + big_s1 + ch + sha256_k[t] + w[t];
        uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = big_s0 + maj;

        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void cordon_sha256_init(struct cordon_sha256 *ctx)
{
    /* §5.3.3: fractional parts of the square roots of the first 8 primes. */
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

    memcpy(ctx->state, h0, sizeof(h0));
    ctx->bytes = 0;
    ctx->fill = 0;
}

void cordon_sha256_update(struct cordon_sha256 *ctx, const void *buf, size_t len)
{
    const unsigned char *p = buf;

    ctx->bytes += len;
    if (ctx->fill > 0) {
        size_t take = 64 - ctx->fill < len ? 64 - ctx->fill : len;

        memcpy(ctx->block + ctx->fill, p, take);
        ctx->fill += take;
        p += take;
        len -= take;
        if (ctx->fill < 64)
            return;
        sha256_block(ctx->state, ctx->block);
        ctx->fill = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        sha256_block(ctx->state, p);
    memcpy(ctx->block, p, len);
    ctx->fill = len;
}

void cordon_sha256_final_hex(struct cordon_sha256 *ctx, char ret_hex[65])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t bits = ctx->bytes * 8;

    /* §5.1.1: a 1 bit, zeros up to 56 mod 64 bytes, the length in bits big-endian. */
    ctx->block[ctx->fill++] = 0x80;
    if (ctx->fill > 56) {
        memset(ctx->block + ctx->fill, 0, 64 - ctx->fill);
        sha256_block(ctx->state, ctx->block);
        ctx->fill = 0;
    }
    memset(ctx->block + ctx->fill, 0, 56 - ctx->fill);
    for (int i = 0; i < 8; i++)
        ctx->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_block(ctx->state, ctx->block);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            ret_hex[8 * i + j] = hex[(ctx->state[i] >> (28 - 4 * j)) & 0xf];
    ret_hex[64] = '\0';
}

void cordon_sha256_hex(const void *buf, size_t len, char ret_hex[65])
{
    struct cordon_sha256 ctx;

    cordon_sha256_init(&ctx);
    cordon_sha256_update(&ctx, buf, len);
    cordon_sha256_final_hex(&ctx, ret_hex);
}

int cordon_sha256_fd(int fd, uint64_t max_bytes, char ret_hex[65], uint64_t *ret_bytes,
                     struct cordon_error *err)
{
    struct cordon_sha256 ctx;
    uint64_t total = 0;
    char *chunk;
    int r = 0;

    if (ret_hex == NULL)
        return cordon_error_set(err, CORDON_E_INVALID, 0, "sha256: no result pointer");
    chunk = malloc(READ_CHUNK);
    if (chunk == NULL)
        return cordon_error_set(err, CORDON_E_NOMEM, ENOMEM, "sha256: out of memory");
    cordon_sha256_init(&ctx);
    for (;;) {
        ssize_t n = read(fd, chunk, READ_CHUNK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = cordon_error_set(err, CORDON_E_IO, errno, "sha256: read fd %d: %s", fd,
                                 strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        total += (uint64_t)n;
        if (max_bytes != 0 && total > max_bytes) {
            r = cordon_error_set(err, CORDON_E_LIMIT, 0,
                                 "sha256: input is more than the limit of %" PRIu64 " bytes",
                                 max_bytes);
            goto out;
        }
        cordon_sha256_update(&ctx, chunk, (size_t)n);
    }
    cordon_sha256_final_hex(&ctx, ret_hex);
    if (ret_bytes != NULL)
        *ret_bytes = total;
out:
    free(chunk);
    return r;
}
