/* kivi_check.c: checks lessons/exercises/kivi_scales.c (lesson 10).
 *
 * The keys are real: the tiny model's prompt run through a kivi cache and,
 * beside it, an f16 cache (kivi quantizes the keys it kept in f16). For
 * every full group of layer 0, KV head 0, the learner's scales and
 * minimums from the f16 keys must equal, bit for bit, the ones the kivi
 * cache stored, at 4 and at 2 bits and for two group sizes. */
#include <string.h>

#include "harness.h"
#include "kernels/codec.h"
#include "kivi_scales.h"

#define PROMPT 40

/* Run the prompt through the cache `spec`; 0 or -1 (printed). */
static int fill(const Model *m, const char *spec, const int *prompt, KvCache **out)
{
    KvGeometry geo = model_kv_geometry(m, 1);
    Err e = { 0 };
    GenOptions go = { .n_generate = 1 };
    int tok;
    *out = kv_open(spec, &geo, &e);
    if (!*out || generate(m, *out, prompt, 1, PROMPT, &go, &tok, NULL, NULL, &e) < 0) {
        printf("the %s run failed: %s\n", spec, e.msg);
        return -1;
    }
    return 0;
}

int main(void)
{
    Model m;
    if (harness_model(&m, "tiny") < 0)
        return 2;
    int prompt[PROMPT];
    for (int i = 0; i < PROMPT; i++)
        prompt[i] = (i * 37 + 11) % (int)m.cfg.vocab;
    const size_t hd = m.cfg.head_dim;
    KvCache *exact;
    if (fill(&m, "contiguous+quant:k=f16,v=f16", prompt, &exact) < 0)
        return 2;
    KvBlock kb;
    kv_block(exact, 0, 0, 0, 0, &kb);
    float *keys = malloc(PROMPT * hd * sizeof(float));
    uint16_t *scale = malloc(hd * sizeof *scale), *min = malloc(hd * sizeof *min);
    if (!keys || !scale || !min)
        return 2;
    for (size_t r = 0; r < kb.n; r++) /* the f16 keys, as floats */
        codec_ref[FMT_F16].dequantize(keys + r * hd, harness_row(kb.k, kb.k_stride, r), hd);
    printf("reference: %zu keys of %zu values (tiny model, layer 0, KV head 0), a kivi cache's groups\n", kb.n, hd);

    static const struct { unsigned bits; size_t group; } cases[] = { { 4, 8 }, { 2, 8 }, { 4, 16 }, { 2, 32 } };
    Tally t = { 0, 0 };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char spec[64];
        snprintf(spec, sizeof spec, "kivi:bits=%u,group=%zu", cases[c].bits, cases[c].group);
        KvCache *kivi;
        if (fill(&m, spec, prompt, &kivi) < 0)
            return 2;
        size_t groups = 0;
        for (size_t b = 0; b < kv_n_blocks(kivi, 0, 0); b++) {
            KvBlock g;
            kv_block(kivi, 0, 0, 0, b, &g);
            if (!g.k_chan) /* the newest keys, still f16 until their group fills */
                continue;
            groups++;
            const size_t pos = g.pos;
            kivi_channel_scales(keys + pos * hd, g.n, hd, cases[c].bits, scale, min);
            for (size_t i = 0; i < hd; i++) {
                const int ok = scale[i] == g.k_chan[i] && min[i] == g.k_chan[hd + i];
                if (tally(&t, ok))
                    printf("%s, group at %zu, channel %zu: expected scale %g and min %g, got %g and %g\n", spec, pos,
                           i, fp16_to_f32(g.k_chan[i]), fp16_to_f32(g.k_chan[hd + i]), fp16_to_f32(scale[i]),
                           fp16_to_f32(min[i]));
            }
        }
        if (groups != PROMPT / cases[c].group) {
            printf("%s: %zu groups in the cache, %zu expected (the engine's layout changed?)\n", spec, groups,
                   PROMPT / cases[c].group);
            return 2;
        }
        kv_free(kivi);
    }
    free(keys);
    free(scale);
    free(min);
    kv_free(exact);
    model_free(&m);
    return verdict(&t, "channels' scales and minimums");
}
