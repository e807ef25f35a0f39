/* mla_report.c: the MLA lines of `kvscope run` (mla_report.h). */
#include "report/mla_report.h"
#include "util/human.h"

#include <inttypes.h>
#include <string.h>

#include "model/memory.h"

const char *mla_report_attention_name(const Model *m, const char *form)
{
    if (m->cfg.attention != ATTN_MLA)
        return form;
    return m->mla_path == MLA_DECOMPRESS ? "mla decompress (tiles of " STR_OF(MLA_TILE_ROWS) " positions, online softmax)"
                                         : "mla absorbed (online softmax over the stored latent rows)";
}

void mla_report_collect(MlaRunStats *dst, const StepReport *r)
{
    const MlaStats *st = r->state ? mla_state_stats(r->state->mla) : NULL;
    if (!st)
        return;
    dst->seen = 1;
    dst->st = *st;
}

/* Positions held per layer, over all sequences (layer 0's). */
static size_t held_positions(const KvCache *cache)
{
    size_t n = 0;
    for (size_t s = 0; s < cache->geo.n_seqs; s++)
        n += kv_length(cache, 0, s);
    return n;
}

void mla_report_summary(FILE *f, OutFormat fmt, const char *label, const Model *m, const MlaRunStats *rm,
                    const KvCache *cache, json_t *root)
{
    if (!rm->seen)
        return;
    const Config *c = &m->cfg;
    const MlaTileStats *t = &rm->st.tiles;
    const MlaPrefetchStats *p = &rm->st.prefetch;
    const int decompress = rm->st.path == MLA_DECOMPRESS;

    /* bytes per token: measured from the cache, and memory.h's closed form */
    KvShape lat = memory_shape(c), ref;
    int have_ref = memory_shape_reference(c, &ref) == 0;
    Format fmt_k = cache ? cache->k_fmt : FMT_F32;
    size_t formula = memory_token_layer_bytes(&lat, fmt_k) * c->n_layers;
    size_t mha = have_ref ? memory_token_layer_bytes(&ref, fmt_k) * c->n_layers : 0;
    size_t held = cache ? held_positions(cache) : 0;
    double measured = held ? (double)kv_bytes_used(cache) / (double)held : 0.0;

    if (fmt == OUT_JSON && root) {
        json_t *mla = json_object_get(root, "mla");
        if (!mla) {
            mla = json_object();
            json_object_set_new(root, "mla", mla);
        }
        json_t *o = json_pack("{s:s, s:I, s:I, s:f, s:I, s:I}", "path", mla_path_name(rm->st.path),
                              "latent_values", (json_int_t)mla_latent_dim(c), "bytes_per_token_formula",
                              (json_int_t)formula, "bytes_per_token_measured", measured,
                              "mha_bytes_per_token", (json_int_t)mha, "passes", (json_int_t)rm->st.passes);
        if (decompress)
            json_object_set_new(o, "tiles",
                                json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "capacity",
                                          (json_int_t)t->capacity, "tile_rows", (json_int_t)t->tile_rows,
                                          "lookups", (json_int_t)t->lookups, "hits", (json_int_t)t->hits,
                                          "misses", (json_int_t)t->misses, "evictions", (json_int_t)t->evictions,
                                          "rows_reused", (json_int_t)t->rows_reused, "rows_decompressed",
                                          (json_int_t)t->rows_decompressed, "hit_rate", mla_tile_hit_rate(t)));
        json_object_set_new(o, "prefetch",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "queued", (json_int_t)p->queued,
                                      "skipped", (json_int_t)p->skipped, "issued", (json_int_t)p->issued,
                                      "lines", (json_int_t)p->lines, "used", (json_int_t)p->used, "expired",
                                      (json_int_t)p->expired, "in_flight", (json_int_t)p->in_flight));
        json_object_set_new(mla, label, o);
        return;
    }
    if (fmt != OUT_TABLE)
        return;
    fprintf(f, "%s MLA: %s path; latent %zu values (%zu kv_lora_rank + %zu qk_rope_dim) per token and layer\n",
            label, mla_path_name(rm->st.path), mla_latent_dim(c), c->kv_lora_rank, c->qk_rope_dim);
    if (cache && held) {
        fprintf(f, "%s MLA cache: %.0f B per token measured (%zu positions held), memory.h %zu B "
                   "(%zu values x %zu layers, %s)",
                label, measured, held, formula, mla_latent_dim(c), c->n_layers, format_name(fmt_k));
        if (mha)
            fprintf(f, "; the decompressed MHA cache: %zu B, %.2fx more", mha, (double)mha / (double)formula);
        fprintf(f, "\n");
    }
    if (decompress) {
        if (t->capacity)
            fprintf(f, "%s MLA tiles: LRU of %zu tiles of %zu positions: %" PRIu64 " lookups, %" PRIu64
                       " hits, %" PRIu64 " misses (hit rate %.1f%%), %" PRIu64 " evictions; rows %" PRIu64
                       " reused, %" PRIu64 " decompressed\n",
                    label, t->capacity, t->tile_rows, t->lookups, t->hits, t->misses,
                    100.0 * mla_tile_hit_rate(t), t->evictions, t->rows_reused, t->rows_decompressed);
        else
            fprintf(f, "%s MLA tiles: no LRU; %" PRIu64 " rows decompressed\n", label, t->rows_decompressed);
    }
    fprintf(f, "%s MLA prefetch: %" PRIu64 " queued, %" PRIu64 " skipped (tile held), %" PRIu64
               " issued (%" PRIu64 " lines of 64 B), %" PRIu64 " used, %" PRIu64 " expired, %zu in flight\n",
            label, p->queued, p->skipped, p->issued, p->lines, p->used, p->expired, p->in_flight);
}
