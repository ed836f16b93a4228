/* cpu_kernels.c: the CPU backend's own kernels (see cpu_kernels.h; the attention core is in
 * cpu_kernels_attn.c). Plain C11 loops written so gcc vectorizes the inner dimension
 * (contiguous, no aliasing between in and out, constant or simple trip counts), split over the
 * backend's thread pool (cpu_threads.h). */
#include "engine/backends/cpu/cpu_kernels.h"
#include "engine/backends/cpu/cpu_kernels_vec.h"   /* PDBX_K_HOT, pdbx_k_exp */

#include <math.h>
#include <string.h>

/* Below this many elements a kernel runs on the caller alone: waking the pool costs more. */
#define PAR_MIN_ELEMS 32768

void pdbx_k_embed_gather(const void *table, int64_t table_rows, int64_t vocab_start,
                         const int32_t *ids, int64_t rows, size_t row_bytes, void *out)
{
    const unsigned char *src = table;
    unsigned char *dst = out;
    for (int64_t i = 0; i < rows; i++) {
        int64_t local = (int64_t)ids[i] - vocab_start;
        if (local < 0 || local >= table_rows)
            memset(dst + (size_t)i * row_bytes, 0, row_bytes);
        else
            memcpy(dst + (size_t)i * row_bytes, src + (size_t)local * row_bytes, row_bytes);
    }
}

/* ---- RMSNorm ------------------------------------------------------------------------------ */
PDBX_K_HOT static void rmsnorm_rows(const float *x, const float *weight, int64_t rows,
                                    int64_t cols, float eps, float *out)
{
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *o = out + i * cols;
        /* 16 partial sums: a float reduction the compiler may vectorise without -ffast-math */
        float part[16] = { 0 };
        int64_t j = 0;
        for (; j + 16 <= cols; j += 16)
            for (int l = 0; l < 16; l++)
                part[l] += xr[j + l] * xr[j + l];
        float ss = 0.0f;
        for (; j < cols; j++)
            ss += xr[j] * xr[j];
        for (int l = 0; l < 16; l++)
            ss += part[l];
        const float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int64_t c = 0; c < cols; c++)
            o[c] = xr[c] * inv * weight[c];
    }
}

typedef struct {
    const float *x, *weight;
    int64_t rows, cols;
    float eps;
    float *out;
} rmsnorm_job;

/* Chunks of rows (16 rows of 2048: 128 KiB read, 128 KiB written): enough of them that a part
 * started late costs little, large enough that taking one costs nothing. */
#define NORM_CHUNK_ROWS 16

static void rmsnorm_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const rmsnorm_job *J = arg;
    const int64_t r0 = chunk * NORM_CHUNK_ROWS;
    const int64_t nr = J->rows - r0 < NORM_CHUNK_ROWS ? J->rows - r0 : NORM_CHUNK_ROWS;
    rmsnorm_rows(J->x + r0 * J->cols, J->weight, nr, J->cols, J->eps, J->out + r0 * J->cols);
}

void pdbx_k_rmsnorm(pdbx_cpu_pool *pool, const float *x, const float *weight, int64_t rows,
                    int64_t cols, float eps, float *out)
{
    rmsnorm_job J = { .x = x, .weight = weight, .rows = rows, .cols = cols, .eps = eps, .out = out };
    if (rows * cols < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (rows + NORM_CHUNK_ROWS - 1) / NORM_CHUNK_ROWS, rmsnorm_chunk, &J);
}

/* ---- linear-layer bias ------------------------------------------------------------------- */
PDBX_K_HOT static void bias_add_rows(float *y, const float *bias, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        float *yr = y + i * cols;
        for (int64_t j = 0; j < cols; j++)
            yr[j] += bias[j];
    }
}

typedef struct {
    float *y;
    const float *bias;
    int64_t rows, cols, chunk_rows;
} bias_job;

/* Rows per chunk: about 16384 elements (64 KiB of y, read and written in cache). */
#define BIAS_CHUNK_ELEMS 16384

static void bias_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const bias_job *J = arg;
    const int64_t r0 = chunk * J->chunk_rows;
    const int64_t nr = J->rows - r0 < J->chunk_rows ? J->rows - r0 : J->chunk_rows;
    bias_add_rows(J->y + r0 * J->cols, J->bias, nr, J->cols);
}

void pdbx_k_bias_add(pdbx_cpu_pool *pool, float *y, const float *bias, int64_t rows, int64_t cols)
{
    if (rows < 1 || cols < 1)
        return;
    int64_t cr = BIAS_CHUNK_ELEMS / cols;
    bias_job J = { .y = y, .bias = bias, .rows = rows, .cols = cols, .chunk_rows = cr < 1 ? 1 : cr };
    if (rows * cols < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (rows + J.chunk_rows - 1) / J.chunk_rows, bias_chunk, &J);
}

/* ---- rotary position embedding ------------------------------------------------------------ */
PDBX_K_HOT static void rope_rows(float *x, int64_t row0, int64_t rows, int64_t heads, int64_t d,
                                 int64_t rot, int64_t seq_len, const float *cos_t, const float *sin_t,
                                 float sign)
{
    const int64_t half = rot / 2;
    for (int64_t r = row0; r < row0 + rows; r++) {
        const float *c = cos_t + (r % seq_len) * half;
        const float *s = sin_t + (r % seq_len) * half;
        float *xr = x + r * heads * d;
        for (int64_t hd = 0; hd < heads; hd++) {
            float *lo = xr + hd * d, *hi = lo + half;
            for (int64_t i = 0; i < half; i++) {
                const float a = lo[i], b = hi[i], sn = sign * s[i];
                lo[i] = a * c[i] - b * sn;
                hi[i] = b * c[i] + a * sn;
            }
        }
    }
}

typedef struct {
    float *x;
    const float *cos_t, *sin_t;
    int64_t rows, heads, d, rot, seq_len, chunk_rows;
    float sign;
} rope_job;

#define ROPE_CHUNK_ELEMS 16384   /* about 64 KiB of x per chunk */

static void rope_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const rope_job *J = arg;
    const int64_t r0 = chunk * J->chunk_rows;
    const int64_t nr = J->rows - r0 < J->chunk_rows ? J->rows - r0 : J->chunk_rows;
    rope_rows(J->x, r0, nr, J->heads, J->d, J->rot, J->seq_len, J->cos_t, J->sin_t, J->sign);
}

void pdbx_k_rope(pdbx_cpu_pool *pool, float *x, int64_t rows, int64_t heads, int64_t d, int64_t rot,
                 int64_t seq_len, const float *cos_t, const float *sin_t, int inverse)
{
    if (rows < 1 || heads < 1 || rot < 2 || rot > d || seq_len < 1)
        return;
    const int64_t width = heads * rot;   /* the elements touched per row */
    int64_t cr = ROPE_CHUNK_ELEMS / width;
    rope_job J = { .x = x, .cos_t = cos_t, .sin_t = sin_t, .rows = rows, .heads = heads, .d = d, .rot = rot,
                   .seq_len = seq_len, .chunk_rows = cr < 1 ? 1 : cr, .sign = inverse ? -1.0f : 1.0f };
    if (rows * width < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (rows + J.chunk_rows - 1) / J.chunk_rows, rope_chunk, &J);
}

void pdbx_k_rope_table(int64_t seq_len, int64_t d, double theta, float *cos_t, float *sin_t)
{
    const int64_t half = d / 2;
    for (int64_t pos = 0; pos < seq_len; pos++)
        for (int64_t i = 0; i < half; i++) {
            const double ang = (double)pos * pow(theta, -2.0 * (double)i / (double)d);
            cos_t[pos * half + i] = (float)cos(ang);
            sin_t[pos * half + i] = (float)sin(ang);
        }
}

/* ---- residual add ------------------------------------------------------------------------- */
PDBX_K_HOT static void add_range(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += x[i];
}

typedef struct {
    float *y;
    const float *x;
    int64_t n;
} add_job;

#define ADD_CHUNK 16384         /* elements: 64 KiB of each stream */

static void add_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const add_job *J = arg;
    const int64_t i0 = chunk * ADD_CHUNK;
    const int64_t n = J->n - i0 < ADD_CHUNK ? J->n - i0 : ADD_CHUNK;
    add_range(J->y + i0, J->x + i0, n);
}

void pdbx_k_add(pdbx_cpu_pool *pool, float *y, const float *x, int64_t n)
{
    if (n < 1)
        return;
    add_job J = { .y = y, .x = x, .n = n };
    if (n < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (n + ADD_CHUNK - 1) / ADD_CHUNK, add_chunk, &J);
}

/* ---- SiLU x up ---------------------------------------------------------------------------- */
PDBX_K_HOT static void silu_mul_range(const float *gate, const float *up, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + pdbx_k_exp(-g)) * up[i];
    }
}

typedef struct {
    const float *gate, *up;
    int64_t n;
    float *out;
} silu_job;

#define SILU_CHUNK 16384        /* elements: 64 KiB of each stream */

static void silu_chunk(void *arg, long long chunk, int part)
{
    (void)part;
    const silu_job *J = arg;
    const int64_t i0 = chunk * SILU_CHUNK;
    const int64_t n = J->n - i0 < SILU_CHUNK ? J->n - i0 : SILU_CHUNK;
    silu_mul_range(J->gate + i0, J->up + i0, n, J->out + i0);
}

void pdbx_k_silu_mul(pdbx_cpu_pool *pool, const float *gate, const float *up, int64_t n, float *out)
{
    silu_job J = { .gate = gate, .up = up, .n = n, .out = out };
    if (n < PAR_MIN_ELEMS)
        pool = NULL;
    pdbx_cpu_pool_for(pool, (n + SILU_CHUNK - 1) / SILU_CHUNK, silu_chunk, &J);
}

uint16_t pdbx_k_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x0040u);            /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                       /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float pdbx_k_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void pdbx_k_fill_uniform(float *x, size_t n, float scale, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (s == 0)
        s = 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        /* 24 random bits -> [-1, 1) */
        float u = (float)(s >> 40) * (1.0f / 8388608.0f) - 1.0f;
        x[i] = u * scale;
    }
}
