/* test_memory.c: the KV cache memory figures (model/memory.h) and the row
 * sizes of the element formats (kernels/format.h), each checked against
 * arithmetic written out here, independently of the engine's code.
 *
 * Where a source document states a figure, the test recomputes it and, when
 * the document's arithmetic differs from what the engine computes, says so
 * in a comment (the lessons will show the right figure). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "kernels/format.h"
#include "model/config.h"
#include "model/memory.h"

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)

static Config load(const char *name)
{
    Config c;
    Err e = { 0 };
    use_repo_data();
    if (config_load(&c, name, &e) < 0 || config_validate(&c, &e) < 0)
        fail_msg("model '%s': %s", name, e.msg);
    return c;
}

static KvBytes bytes_of(const Config *c, const KvShape *s, Format f, size_t context, size_t batch)
{
    KvBytes b;
    Err e = { 0 };
    if (memory_bytes(c, s, f, context, batch, &b, &e) < 0)
        fail_msg("memory_bytes: %s", e.msg);
    return b;
}

static KvBytes cache_bytes(const Config *c, Format f, size_t context, size_t batch)
{
    KvShape s = memory_shape(c);
    return bytes_of(c, &s, f, context, batch);
}

/* --- formats ---------------------------------------------------------------- */

static void test_format_row_bytes(void **state)
{
    (void)state;
    /* plain formats: 4 and 2 bytes per value */
    assert_int_equal(format_row_bytes(FMT_F32, 128), 128 * 4);
    assert_int_equal(format_row_bytes(FMT_F16, 128), 128 * 2);
    assert_int_equal(format_row_bytes(FMT_F16, 7), 14);
    /* q8_0: blocks of 32 values, each a 2-byte fp16 scale + 32 int8 = 34 bytes */
    assert_int_equal(format_row_bytes(FMT_Q8_0, 128), (128 / 32) * (2 + 32));
    /* q4_0: blocks of 32, a 2-byte scale + 16 bytes of nibbles = 18 bytes:
     * 18/32 of a byte per value for a row that is a multiple of 32 */
    assert_int_equal(format_row_bytes(FMT_Q4_0, 128), 128 * 18 / 32);
    assert_int_equal(format_row_bytes(FMT_Q4_0, 576), 576 * 18 / 32);
    /* rows that are not a multiple of 32 round up to whole blocks */
    assert_int_equal(format_row_bytes(FMT_Q4_0, 33), 2 * 18);
    assert_int_equal(format_row_bytes(FMT_Q8_0, 1), 34);
    /* int4 / fp4: 8 values per uint32, one fp16 scale per row:
     * head_dim / 2 + 2 bytes for head_dim a multiple of 8 */
    assert_int_equal(format_row_bytes(FMT_INT4, 128), 128 / 2 + 2);
    assert_int_equal(format_row_bytes(FMT_FP4, 128), 128 / 2 + 2);
    assert_int_equal(format_row_bytes(FMT_FP4, 64), 64 / 2 + 2);
    /* 12 values take two whole words */
    assert_int_equal(format_row_bytes(FMT_INT4, 12), 2 * 4 + 2);
    /* an unknown format has no size */
    assert_int_equal(format_row_bytes((Format)FMT_COUNT, 128), 0);
}

static void test_format_names(void **state)
{
    (void)state;
    for (int i = 0; i < FMT_COUNT; i++) {
        Format f;
        assert_int_equal(format_parse(format_name((Format)i), &f), 0);
        assert_int_equal(f, i);
        assert_non_null(strstr(format_names, format_name((Format)i)));
    }
    Format f;
    assert_int_equal(format_parse("q3_k", &f), -1);
    assert_int_equal(format_parse("F16", &f), -1);
    assert_int_equal(format_parse("", &f), -1);
    assert_int_equal(FMT_F32, 0);
    assert_string_equal(format_name(FMT_F32), "f32");
}

/* --- the teaching notes: the 7B model ------------------------------------------------ */

static void test_llama2_7b(void **state)
{
    (void)state;
    Config c = load("llama-2-7b");
    /* 2 (K,V) x 32 layers x 32 KV heads x 128 head_dim x 2 bytes */
    size_t per_token = (size_t)2 * 32 * 32 * 128 * 2;
    assert_int_equal(per_token, 524288); /* the teaching notes: "524,288 x seq_len bytes" */
    KvBytes b = cache_bytes(&c, FMT_F16, 4096, 1);
    assert_int_equal(b.token_layer, per_token / 32);
    assert_int_equal(b.token, per_token);
    assert_int_equal(b.layer, per_token / 32 * 4096);
    assert_int_equal(b.total, per_token * 4096);
    assert_int_equal(b.total, 2 * GiB); /* the teaching notes: 4,096 tokens "2 GB" (GiB) */
    /* the teaching notes' table: 32,768 tokens "16 GB", batch 32 at 4,096 "64 GB",
     * batch 32 at 8K "128 GB": all right, in GiB */
    assert_int_equal(cache_bytes(&c, FMT_F16, 32768, 1).total, 16 * GiB);
    assert_int_equal(cache_bytes(&c, FMT_F16, 4096, 32).total, 64 * GiB);
    assert_int_equal(cache_bytes(&c, FMT_F16, 8192, 32).total, 128 * GiB);
    /* MHA already: nothing to compare with */
    KvShape ref;
    assert_int_equal(memory_shape_reference(&c, &ref), -1);
}

/* --- the teaching notes, exercise 1: Llama 3 8B, GQA vs MHA at 8,192 ---------------- */

static void test_llama3_8b_gqa_vs_mha(void **state)
{
    (void)state;
    Config c = load("llama-3-8b");
    size_t gqa = (size_t)2 * 32 * 8 * 8192 * 128 * 2;  /* 2 x layers x kv x seq x d_k x bytes */
    size_t mha = (size_t)2 * 32 * 32 * 8192 * 128 * 2;
    KvBytes b = cache_bytes(&c, FMT_F16, 8192, 1);
    assert_int_equal(b.total, gqa);
    assert_int_equal(b.total, 1 * GiB);
    KvShape ref;
    assert_int_equal(memory_shape_reference(&c, &ref), 0);
    assert_int_equal(ref.kind, KV_SHAPE_MHA);
    KvBytes m = bytes_of(&c, &ref, FMT_F16, 8192, 1);
    assert_int_equal(m.total, mha);
    assert_int_equal(m.total, 4 * GiB);
    assert_int_equal(m.total / b.total, 4);
    assert_int_equal(m.total % b.total, 0);
    /* the teaching notes' quiz: "0.5 MB per token drops to ~0.125 MB": 131,072 B = 0.125 MiB */
    assert_int_equal(b.token, 128 * KiB);
}

/* --- the Marlin design: the Metal Marlin cache -------------------------------------- */

static void test_seed000_marlin(void **state)
{
    (void)state;
    Config c = load("marlin-gqa-32l");
    /* The Marlin design writes: "FP16: 32 layers * 2(K+V) * 8 heads * 4096 seq * 128 dim
     * * 2 bytes = 4 GB". The product it writes is 536,870,912 bytes = 512 MiB,
     * not 4 GB: the document's figure is 8x too large (and so are its 32K
     * "32.0 GB" -> 4 GiB, and its decode read "4 GB ... ~10ms" -> 512 MiB,
     * ~1.3 ms at 400 GB/s). The engine computes the product. */
    size_t f16_total = (size_t)32 * 2 * 8 * 4096 * 128 * 2;
    assert_int_equal(f16_total, 536870912);
    KvBytes b = cache_bytes(&c, FMT_F16, 4096, 1);
    assert_int_equal(b.total, f16_total);
    assert_int_equal(b.total, 512 * MiB);
    assert_true(b.total != 4 * GiB); /* the document's "4 GB" */
    assert_int_equal(cache_bytes(&c, FMT_F16, 32768, 1).total, 4 * GiB);

    /* FP4 / INT4: per row (one position, one KV head) 128 values in 16
     * uint32 words = 64 bytes, plus a 2-byte fp16 scale = 66 bytes.
     * Rows: 32 layers x 2 (K,V) x 8 heads x 4096 positions. The Marlin design says
     * "~1.06 GB (3.8x savings)"; the product is 138,412,032 bytes = 132 MiB
     * (the same 8x slip as above), and the saving is 256/66 = 3.88x, which
     * the document rounds down to 3.8x. Its 32K "~8.5 GB" is 1,056 MiB. */
    size_t rows = (size_t)32 * 2 * 8 * 4096;
    size_t fp4_total = rows * (128 / 8 * 4 + 2);
    assert_int_equal(fp4_total, 138412032);
    assert_int_equal(fp4_total, 132 * MiB);
    assert_int_equal(cache_bytes(&c, FMT_FP4, 4096, 1).total, fp4_total);
    assert_int_equal(cache_bytes(&c, FMT_INT4, 4096, 1).total, fp4_total);
    assert_int_equal(cache_bytes(&c, FMT_FP4, 32768, 1).total, 1056 * MiB);
    double saving = (double)f16_total / (double)fp4_total;
    assert_true(fabs(saving - 256.0 / 66.0) < 1e-12);
    assert_true(saving > 3.87 && saving < 3.88);
    /* "Scale overhead is negligible: 2 bytes per row vs 256 bytes of data":
     * the 256 is the f16 row; the 4-bit row's data is 64 bytes, so the scale
     * is 2/66 = 3% of an fp4 row. */
    assert_int_equal(format_row_bytes(FMT_F16, 128), 256);
    assert_int_equal(format_row_bytes(FMT_FP4, 128) - 128 / 2, 2);

    /* q4_0 of the same cache: 18/32 bytes per value */
    size_t values = (size_t)32 * 2 * 8 * 4096 * 128;
    assert_int_equal(cache_bytes(&c, FMT_Q4_0, 4096, 1).total, values / 32 * 18);
    assert_int_equal(cache_bytes(&c, FMT_Q8_0, 4096, 1).total, values / 32 * 34);
    assert_int_equal(cache_bytes(&c, FMT_F32, 4096, 1).total, values * 4);
}

/* --- the MLA notes: the MLA latent ---------------------------------------------- */

static void test_mla_glm(void **state)
{
    (void)state;
    Config c = load("glm-mla");
    KvShape s = memory_shape(&c);
    assert_int_equal(s.kind, KV_SHAPE_MLA_LATENT);
    /* the latent: kv_lora_rank + qk_rope_head_dim = 512 + 64 values */
    assert_int_equal(memory_shape_values(&s), 512 + 64);
    assert_int_equal(memory_shape_values(&s), 576);
    assert_int_equal(memory_token_layer_bytes(&s, FMT_F16), 576 * 2); /* the MLA notes: 1,152 bytes */

    /* decompressed: 20 heads x (192 + 64 K + 256 V) = 10,240 values, the
     * seed's "512 dims vs 10240 dims" (its 512 leaves out the 64 RoPE dims) */
    KvShape ref;
    assert_int_equal(memory_shape_reference(&c, &ref), 0);
    assert_int_equal(ref.kind, KV_SHAPE_MLA_DECOMPRESSED);
    assert_int_equal(memory_shape_values(&ref), 20 * (192 + 64 + 256));
    assert_int_equal(memory_shape_values(&ref), 10240);
    /* The MLA notes: "For GLM-4-9B: 20 * 256 * 2 * 2 = 20,480 bytes per token".
     * The product is right, but it is per token *per layer* (one layer's K
     * and V of 20 heads); per token over GLM-4.7-Flash's 47 layers it is
     * 962,560 bytes. And the model is GLM-4.7-Flash (the MLA notes' own title):
     * GLM-4-9B has no MLA (see test_glm4_9b below). */
    assert_int_equal(memory_token_layer_bytes(&ref, FMT_F16), 20 * 256 * 2 * 2);
    assert_int_equal(memory_token_layer_bytes(&ref, FMT_F16), 20480);
    KvBytes lat = cache_bytes(&c, FMT_F16, 1, 1), dec = bytes_of(&c, &ref, FMT_F16, 1, 1);
    assert_int_equal(dec.token, (size_t)20480 * 47);
    assert_int_equal(lat.token, (size_t)1152 * 47);
    /* "Memory Reduction: 20,480 / 1,152 = 17.78x": right */
    double r = (double)dec.token / (double)lat.token;
    assert_true(fabs(r - 20480.0 / 1152.0) < 1e-12);
    assert_true(fabs(r - 17.78) < 0.005);

    /* The MLA notes' benchmark, "32-layer model, 16K sequence": "32 * 64 pages *
     * 128 tokens/page * 576 dims * 2 bytes = 288 MB", standard "5,120 MB".
     * 64 pages of 128 tokens are 8,192 tokens, not 16K: at 16,384 tokens the
     * latent cache is 576 MiB and the standard one 10,240 MiB. The document's
     * 288 MB and 5,120 MB are the 8,192-token figures (their ratio, 17.78x,
     * holds either way). */
    Config c32 = c;
    c32.n_layers = 32;
    KvBytes l16 = cache_bytes(&c32, FMT_F16, 16384, 1), l8 = cache_bytes(&c32, FMT_F16, 8192, 1);
    assert_int_equal(l16.total, (size_t)32 * 16384 * 576 * 2);
    assert_int_equal(l16.total, 576 * MiB);
    assert_int_equal(l8.total, (size_t)32 * 64 * 128 * 576 * 2);
    assert_int_equal(l8.total, 288 * MiB);
    assert_int_equal(bytes_of(&c32, &ref, FMT_F16, 16384, 1).total, 10240 * MiB);
    assert_int_equal(bytes_of(&c32, &ref, FMT_F16, 8192, 1).total, 5120 * MiB);

    /* quantized latent: one row of 576 values, 18 blocks of 32 */
    assert_int_equal(memory_token_layer_bytes(&s, FMT_Q4_0), 576 / 32 * 18);
    assert_int_equal(memory_token_layer_bytes(&s, FMT_FP4), 576 / 2 + 2);
}

static void test_mla_deepseek_v2_lite(void **state)
{
    (void)state;
    Config c = load("deepseek-v2-lite");
    KvShape s = memory_shape(&c), ref;
    assert_int_equal(memory_shape_values(&s), 512 + 64);
    assert_int_equal(memory_shape_reference(&c, &ref), 0);
    /* 16 heads x (128 nope + 64 rope K + 128 V) */
    assert_int_equal(memory_shape_values(&ref), 16 * (128 + 64 + 128));
    KvBytes b = cache_bytes(&c, FMT_F16, 32768, 1); /* the model card's 32k */
    assert_int_equal(b.token, (size_t)27 * 576 * 2);
    assert_int_equal(b.total, (size_t)27 * 576 * 2 * 32768);
}

/* The real GLM-4-9B (THUDM/glm-4-9b-chat config.json: 40 layers, 32 heads,
 * multi_query_group_num 2, kv_channels 128) is GQA, not MLA: its f16 cache
 * is 1,024 bytes per token per layer, not the 20,480 the MLA notes gives it. */
static void test_glm4_9b(void **state)
{
    (void)state;
    Config c;
    config_defaults(&c);
    snprintf(c.name, sizeof c.name, "glm-4-9b");
    c.d_model = 4096;
    c.n_layers = 40;
    c.n_heads = 32;
    c.n_kv_heads = 2;
    c.head_dim = 128;
    c.ffn_dim = 13696;
    c.vocab = 151552;
    c.max_seq_len = 131072;
    Err e = { 0 };
    assert_int_equal(config_validate(&c, &e), 0);
    KvBytes b = cache_bytes(&c, FMT_F16, 1, 1);
    assert_int_equal(b.token_layer, 2 * 2 * 128 * 2);
    assert_int_equal(b.token, (size_t)40 * 1024);
}

/* --- edges ------------------------------------------------------------------ */

static void test_sliding_window(void **state)
{
    (void)state;
    Config c = load("mistral-7b");
    assert_int_equal(c.sliding_window, 4096);
    assert_int_equal(memory_cached_positions(&c, 32768), 4096);
    assert_int_equal(memory_cached_positions(&c, 100), 100);
    assert_int_equal(cache_bytes(&c, FMT_F16, 4096, 1).total, (size_t)2 * 32 * 8 * 128 * 2 * 4096);
    Config l = load("llama-2-7b");
    assert_int_equal(memory_cached_positions(&l, 1000000), 1000000);
}

static void test_overflow(void **state)
{
    (void)state;
    Config c = load("llama-2-7b");
    KvShape s = memory_shape(&c);
    KvBytes b;
    Err e = { 0 };
    assert_int_equal(memory_bytes(&c, &s, FMT_F16, SIZE_MAX / 4, SIZE_MAX / 4, &b, &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "too large"));
    /* zero tokens is an empty cache, not an error */
    assert_int_equal(memory_bytes(&c, &s, FMT_F16, 0, 1, &b, &e), 0);
    assert_int_equal(b.total, 0);
    assert_int_equal(b.token, 524288);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_row_bytes),
        cmocka_unit_test(test_format_names),
        cmocka_unit_test(test_llama2_7b),
        cmocka_unit_test(test_llama3_8b_gqa_vs_mha),
        cmocka_unit_test(test_seed000_marlin),
        cmocka_unit_test(test_mla_glm),
        cmocka_unit_test(test_mla_deepseek_v2_lite),
        cmocka_unit_test(test_glm4_9b),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
