/* mla_shape.c: what an MLA config must be and what its attention costs in
 * closed form (mla_shape.h). */
#include "model/mla_shape.h"

#include <string.h>

size_t mla_latent_dim(const Config *c)
{
    return c->kv_lora_rank + c->qk_rope_dim;
}

int mla_check_config(const Config *c, Err *e)
{
    if (c->architecture != ARCH_DECODER)
        return err_set(e, ERR_USAGE, "model '%s': kvscope runs MLA in decoder-only models", c->name);
    if (strcmp(c->weights, "synthetic") != 0)
        return err_set(e, ERR_USAGE, "model '%s': an MLA model takes synthetic weights only", c->name);
    if (c->qk_nope_dim == 0 || c->v_head_dim == 0)
        return err_set(e, ERR_USAGE, "model '%s': MLA needs qk_nope_dim and v_head_dim", c->name);
    if (c->qk_rope_dim % 2 != 0)
        return err_set(e, ERR_USAGE, "model '%s': qk_rope_dim (%zu) must be even (RoPE rotates pairs)", c->name,
                       c->qk_rope_dim);
    if (c->head_dim != c->qk_nope_dim + c->qk_rope_dim)
        return err_set(e, ERR_USAGE, "model '%s': MLA needs head_dim = qk_nope_dim + qk_rope_dim = %zu (the query "
                       "head), got %zu", c->name, c->qk_nope_dim + c->qk_rope_dim, c->head_dim);
    if (c->n_kv_heads != c->n_heads)
        return err_set(e, ERR_USAGE, "model '%s': MLA needs n_kv_heads = n_heads = %zu (each head rebuilds its own K "
                       "and V from the latent), got %zu", c->name, c->n_heads, c->n_kv_heads);
    if (c->v_head_dim > c->head_dim)
        return err_set(e, ERR_USAGE, "model '%s': v_head_dim (%zu) must not exceed head_dim (%zu)", c->name,
                       c->v_head_dim, c->head_dim);
    return 0;
}

static const char *const path_names[] = { [MLA_ABSORBED] = "absorbed", [MLA_DECOMPRESS] = "decompress" };

const char *mla_path_name(MlaPath p)
{
    return (unsigned)p < sizeof path_names / sizeof path_names[0] ? path_names[p] : "?";
}

int mla_path_parse(const char *name, MlaPath *out)
{
    for (size_t i = 0; i < sizeof path_names / sizeof path_names[0]; i++)
        if (strcmp(name, path_names[i]) == 0) {
            *out = (MlaPath)i;
            return 0;
        }
    return -1;
}

void mla_flops(const Config *c, MlaPath path, uint64_t n_q, uint64_t seen, uint64_t rows_up, MlaFlops *f)
{
    const uint64_t d = c->d_model, H = c->n_heads, r = c->kv_lora_rank, p = c->qk_rope_dim;
    const uint64_t dn = c->qk_nope_dim, dv = c->v_head_dim;
    memset(f, 0, sizeof *f);
    f->q = 2 * n_q * d * H * (dn + p);
    f->k = 2 * n_q * d * (r + p);
    f->o = 2 * n_q * H * dv * d;
    f->softmax = 5 * seen * H;
    if (path == MLA_DECOMPRESS) {
        f->k += 2 * rows_up * r * H * dn;
        f->v = 2 * rows_up * r * H * dv;
        f->qk = 2 * seen * H * (dn + p);
        f->av = 2 * seen * H * dv;
    } else {
        f->q += 2 * n_q * H * dn * r;
        f->o += 2 * n_q * H * r * dv;
        f->qk = 2 * seen * H * (r + p);
        f->av = 2 * seen * H * r;
    }
}

uint64_t mla_flops_total(const MlaFlops *f)
{
    return f->q + f->k + f->v + f->o + f->qk + f->av + f->softmax;
}
