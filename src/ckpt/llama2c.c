/* llama2c.c: Karpathy's llama2.c checkpoints (the legacy export, run.c's
 * format). After the 7 x int32 header, f32 tensors, each stacked over the
 * layers ([n_layers][rows][cols]), in this order:
 *
 *   token_embedding_table  [vocab][dim]
 *   rms_att_weight         [n_layers][dim]
 *   wq                     [n_layers][dim][dim]          (rows: n_heads * head_size = dim)
 *   wk, wv                 [n_layers][kv_dim][dim]       (kv_dim = dim * n_kv_heads / n_heads)
 *   wo                     [n_layers][dim][dim]
 *   rms_ffn_weight         [n_layers][dim]
 *   w1 (gate)              [n_layers][hidden_dim][dim]
 *   w2 (down)              [n_layers][dim][hidden_dim]
 *   w3 (up)                [n_layers][hidden_dim][dim]
 *   rms_final_weight       [dim]
 *   freq_cis_real, _imag   [seq_len][head_size / 2] each (unused: RoPE is recomputed)
 *   wcls                   [vocab][dim], only when the header's vocab_size is negative
 *
 * head_size = dim / n_heads; RoPE on adjacent pairs with theta 10000, RMS
 * norm epsilon 1e-5 (run.c's constants). The newer exports (magic "ak42",
 * versions 1 and 2) are refused with a message saying so. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ckpt/ckpt.h"

#define AK42_MAGIC 0x616b3432u

/* a * b into *out; 0 on success, -1 on overflow. */
static int mul(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}

static int add(size_t *acc, size_t n)
{
    return __builtin_add_overflow(*acc, n, acc) ? -1 : 0;
}

int llama2c_parse(Checkpoint *ck, const char *fallback_name, Err *e)
{
    const MappedFile *m = &ck->map;
    if (m->size >= 4) {
        uint32_t magic;
        memcpy(&magic, m->data, 4);
        if (magic == AK42_MAGIC)
            return err_set(e, ERR_USAGE, "a llama2.c export of version 1 or 2 (magic \"ak42\"); kvscope reads the "
                           "legacy format (export.py --version 0)");
    }
    if (m->size < LLAMA2C_HEADER_BYTES)
        return err_set(e, ERR_USAGE, "neither a GGUF file nor a llama2.c checkpoint (%zu bytes: shorter than a "
                       "llama2.c header)", m->size);
    int32_t h[7];
    memcpy(h, m->data, sizeof h);
    const int32_t dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kv_heads = h[4], seq = h[6];
    const int tied = h[5] > 0;
    const int64_t vocab = h[5] < 0 ? -(int64_t)h[5] : h[5];
    if (dim <= 0 || hidden <= 0 || layers <= 0 || heads <= 0 || kv_heads <= 0 || vocab <= 0 || seq <= 0 ||
        dim % heads != 0 || kv_heads > heads || heads % kv_heads != 0 || (dim / heads) % 2 != 0)
        return err_set(e, ERR_USAGE, "neither a GGUF file nor a llama2.c checkpoint (the header dim %d, "
                       "hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d "
                       "does not describe a model)", dim, hidden, layers, heads, kv_heads, h[5], seq);
    CkptShape *s = &ck->shape;
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", fallback_name);
    s->d_model = (size_t)dim;
    s->ffn_dim = (size_t)hidden;
    s->n_layers = (size_t)layers;
    s->n_heads = (size_t)heads;
    s->n_kv_heads = (size_t)kv_heads;
    s->head_dim = (size_t)(dim / heads);
    s->vocab = (size_t)vocab;
    s->context = (size_t)seq;
    s->rope_theta = 10000.0;
    s->norm_eps = 1e-5;
    s->tied = tied;
    /* where each role starts, in floats after the header; overflow or a
     * size other than the file's means this is not a llama2.c file */
    static const CkptRole order[CK_ROLE_COUNT] = { /* the file's order: w1, w2, w3 = gate, down, up */
        CK_EMBED, CK_ATTN_NORM, CK_WQ, CK_WK, CK_WV, CK_WO, CK_FFN_NORM, CK_GATE, CK_DOWN, CK_UP,
        CK_FINAL_NORM, CK_OUTPUT,
    };
    size_t at = 0, n = 0, L = s->n_layers;
    int bad = 0;
    for (int i = 0; i < CK_ROLE_COUNT && !bad; i++) {
        CkptRole r = order[i];
        if (r == CK_OUTPUT) {
            size_t freq;
            bad |= mul((size_t)seq, s->head_dim, &freq) || add(&at, freq); /* real and imaginary halves */
            if (tied)
                break;
        }
        size_t rows, cols;
        ckpt_role_dims(s, r, &rows, &cols);
        ck->l2c_at[r] = at;
        bad |= mul(rows, cols, &n) || (ckpt_role_per_layer(r) && mul(n, L, &n)) || add(&at, n);
    }
    if (tied)
        ck->l2c_at[CK_OUTPUT] = ck->l2c_at[CK_EMBED];
    size_t want = 0;
    bad |= mul(at, sizeof(float), &want) || add(&want, LLAMA2C_HEADER_BYTES);
    if (bad || want != m->size)
        return err_set(e, ERR_USAGE, "neither a GGUF file nor a llama2.c checkpoint (%zu bytes; a llama2.c header "
                       "dim %d, n_layers %d, vocab_size %d implies %s%zu)", m->size, dim, layers, h[5],
                       bad ? "more than " : "", bad ? SIZE_MAX : want);
    return 0;
}

int llama2c_tensor(const Checkpoint *ck, CkptRole r, size_t layer, CkptTensor *t, Err *e)
{
    (void)e; /* the layout was checked against the file's size by llama2c_parse */
    size_t rows, cols;
    ckpt_role_dims(&ck->shape, r, &rows, &cols);
    size_t at = ck->l2c_at[r] + (ckpt_role_per_layer(r) ? layer * rows * cols : 0);
    *t = (CkptTensor){ .data = ck->map.data + LLAMA2C_HEADER_BYTES + at * sizeof(float), .fmt = FMT_F32,
                       .rows = rows, .cols = cols };
    static const char *const names[CK_ROLE_COUNT] = {
        "token_embedding_table", "rms_att_weight", "wq", "wk", "wv", "wo", "rms_ffn_weight",
        "w1", "w3", "w2", "rms_final_weight", "wcls",
    };
    if (ckpt_role_per_layer(r))
        snprintf(t->name, sizeof t->name, "%s[%zu]", names[r], layer);
    else
        snprintf(t->name, sizeof t->name, "%s", names[r == CK_OUTPUT && ck->shape.tied ? CK_EMBED : r]);
    return 0;
}
