/* mla_shape.h: an MLA config's shape (mla.h has the maths): the checks the
 * engine needs, the latent row's width, the read paths by name, and the
 * sublayer's FLOPs in closed form. Weights and reports use these without
 * the attention itself. */
#ifndef KVSCOPE_MODEL_MLA_SHAPE_H
#define KVSCOPE_MODEL_MLA_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/model.h"
#include "util/err.h"

#define MLA_DEFAULT_TILES 4   /* the MLA notes' threadgroup_cache_size */

/* Values one cached latent row holds: kv_lora_rank + qk_rope_dim. */
size_t mla_latent_dim(const Config *c);

/* Check what the engine needs of an MLA config: head_dim = qk_nope_dim +
 * qk_rope_dim (the query head), qk_rope_dim even, v_head_dim <= head_dim,
 * n_kv_heads = n_heads (the .ini convention), a decoder with synthetic
 * weights. ERR_USAGE naming the key otherwise. */
int mla_check_config(const Config *c, Err *e);

/* "absorbed" / "decompress". */
const char *mla_path_name(MlaPath p);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int mla_path_parse(const char *name, MlaPath *out);

/* FLOPs of one layer's MLA sublayer in closed form, into the Counters fields
 * named above: n_q query tokens seeing `seen` rows in total (summed over the
 * queries), `rows_up` rows up-projected (decompress; with no tile reused,
 * every distinct row read in the pass). Norms, RoPE and residual
 * (flops_other) are left out. */
typedef struct {
    uint64_t q, k, v, o, qk, av, softmax;
} MlaFlops;
void mla_flops(const Config *c, MlaPath path, uint64_t n_q, uint64_t seen, uint64_t rows_up, MlaFlops *out);
uint64_t mla_flops_total(const MlaFlops *f);

#endif
