/* fuzz_cache.c: libFuzzer target for cache specs as the layouts read them
 * (kv/cache.h's kv_open), beyond the grammar fuzz_spec covers.
 *
 * Each input is a spec opened against a small geometry whose mem_limit is
 * 8 MiB: whatever its options ask, a layout must refuse them (one line) or
 * hold them within that limit, sized before it allocates. A cache that opens
 * takes a few tokens one at a time in each sequence (a shift cache shifts
 * within them), and every row its
 * blocks show is read (ASan checks each lies in its storage). */
#include "fuzz_util.h"
#include "kv/cache.h"

#define N_TOKENS 12

static void read_blocks(const KvCache *c)
{
    const KvGeometry *g = &c->geo;
    for (size_t l = 0; l < g->n_layers; l++)
        for (size_t s = 0; s < g->n_seqs; s++)
            for (size_t h = 0; h < g->n_kv_heads; h++)
                for (size_t i = 0; i < kv_n_blocks(c, l, s); i++) {
                    KvBlock b;
                    kv_block(c, l, s, h, i, &b);
                    if (b.n == 0)
                        continue;
                    const size_t kb = format_row_bytes(b.k_fmt, g->head_dim);
                    const size_t vb = format_row_bytes(b.v_fmt, g->head_dim);
                    const volatile unsigned char *k = b.k, *v = b.v;
                    (void)k[0], (void)k[(b.n - 1) * b.k_stride + kb - 1];
                    (void)v[0], (void)v[(b.n - 1) * b.v_stride + vb - 1];
                }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (!s)
        return 0;
    const KvGeometry geo = { .n_layers = 2, .n_seqs = 2, .n_kv_heads = 2, .head_dim = 32, .max_seq_len = 64,
                             .mem_limit = (size_t)8 << 20, .rope_theta = 10000.0 };
    Err e;
    KvCache *c = kv_open(s, &geo, &e);
    if (!c) {
        fuzz_check_err(&e, s);
        free(s);
        return 0;
    }
    float k[2 * 32], v[2 * 32];
    for (size_t i = 0; i < 2 * 32; i++)
        k[i] = (float)i / 7.0f - 4.0f, v[i] = 1.0f - (float)i / 9.0f;
    for (size_t seq = 0; seq < geo.n_seqs; seq++)
        for (size_t pos = 0; pos < N_TOKENS; pos++) {
            int tok = (int)pos;
            if (kv_reserve(c, seq, pos, &tok, 1, NULL, &e) < 0) {
                fuzz_check_err(&e, s);
                break;
            }
            int failed = 0;
            for (size_t l = 0; l < geo.n_layers && !failed; l++)
                if (kv_append(c, l, seq, pos - kv_pos_shift(c, seq), 1, k, v, NULL, &e) < 0) /* a shift's own */
                    fuzz_check_err(&e, s), failed = 1;
            if (failed)
                break;
        }
    read_blocks(c);
    KvStats st;
    kv_stats(c, &st);
    (void)kv_bytes_used(c);
    (void)kv_bytes_reserved(c);
    kv_free(c);
    free(s);
    return 0;
}
