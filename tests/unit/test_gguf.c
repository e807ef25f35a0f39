/* test_gguf.c: checkpoints in and out (ckpt/, model/checkpoint.h).
 *
 * Round trips: export -> load gives the same f32 weights bit for bit and
 * the same logits; q8_0/q4_0/f16 tensors hold exactly the engine's own
 * quantizer's bytes; a llama2.c file written here loads and generates the
 * engine's tokens. RoPE: the row permutation llama.cpp's converter applies
 * makes a halves-order projection run under the engine's pair-order RoPE.
 * Malformed files: each kind of damage gives a one-line error, never a
 * crash (the sanitizer pass runs this file too). Tokenizers: a hand-made
 * SentencePiece-style vocabulary encodes to ids worked out by hand, alone,
 * in a GGUF and in a llama2.c tokenizer.bin; damaged ones are refused. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "ckpt/gguf.h"
#include "ckpt/rope_order.h"
#include "model/checkpoint.h"
#include "model/forward.h"
#include "model/generate.h"
#include "text/tokenizer.h"

/* the fuzzer's seeds and every crasher it found (make fuzz) */
#define FUZZ_DIR "tests/fuzz/corpus/gguf"

/* --- helpers -------------------------------------------------------------- */

/* A fresh temporary file name (the file exists, empty); caller unlinks. */
static void temp_path(char *buf, size_t cap, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, cap, "%s/kvscope-test-XXXXXX%s", dir && *dir ? dir : P_tmpdir, suffix);
    int fd = mkstemps(buf, (int)strlen(suffix));
    assert_true(fd >= 0);
    close(fd);
}

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*size ? *size : 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, *size, f), *size);
    fclose(f);
    return buf;
}

static void write_all(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
}

/* Logits of the last token after an uncached pass over tokens[0..n). */
static void logits_of(const Model *m, const int *tokens, size_t n, float *logits)
{
    ForwardState s;
    Err e = { 0 };
    Counters ctr = { 0 };
    assert_int_equal(forward_state_init(&s, &m->cfg, n, 0, &e), 0);
    if (model_forward(m, &s, NULL, tokens, 1, n, 0, logits, &ctr, &e) < 0)
        fail_msg("forward: %s", e.msg);
    forward_state_free(&s);
}

/* Export m as fmt to a temporary file; the caller unlinks path. */
static void export_to(const Model *m, Format fmt, char *path, size_t cap)
{
    Err e = { 0 };
    temp_path(path, cap, ".gguf");
    if (model_export_gguf(m, NULL, path, fmt, NULL, NULL, NULL, &e) < 0)
        fail_msg("export: %s", e.msg);
}

static void load_from(const char *path, Model *m)
{
    Config c;
    Err e = { 0 };
    if (config_from_checkpoint(&c, path, &e) < 0 || config_validate(&c, &e) < 0)
        fail_msg("config_from_checkpoint: %s", e.msg);
    test_model(m, &c);
}

/* A valid GGUF of the small test model, as bytes (f32 matrices). */
static unsigned char *valid_gguf(size_t *size, Format fmt)
{
    Config c = test_config(2, 4, 2);
    Model m;
    test_model(&m, &c);
    char path[512];
    export_to(&m, fmt, path, sizeof path);
    unsigned char *buf = read_all(path, size);
    unlink(path);
    model_free(&m);
    return buf;
}

/* Open bytes as a GGUF checkpoint; returns the reader's result, the
 * message in e (checked to be one line when it fails). */
static int open_bytes(const void *data, size_t size, Err *e)
{
    Checkpoint ck;
    memset(e, 0, sizeof *e);
    int rc = ckpt_open_gguf_memory(&ck, data, size, "test", e);
    if (rc == 0)
        ckpt_close(&ck);
    else {
        assert_true(e->msg[0] != '\0');
        assert_null(strchr(e->msg, '\n'));
    }
    return rc;
}

static void expect_error(const void *data, size_t size, const char *want)
{
    Err e;
    assert_int_equal(open_bytes(data, size, &e), -1);
    if (!strstr(e.msg, want))
        fail_msg("error '%s' does not say '%s'", e.msg, want);
}

/* Byte position just after the GGUF string `needle` (its u64 length, then
 * its bytes: a key or a tensor name, not a part of a longer one) in buf. */
static size_t find_after(const unsigned char *buf, size_t size, const char *needle)
{
    uint64_t n = strlen(needle), len;
    for (size_t i = 0; i + 8 + n <= size; i++) {
        memcpy(&len, buf + i, 8);
        if (len == n && memcmp(buf + i + 8, needle, n) == 0)
            return i + 8 + n;
    }
    fail_msg("'%s' not found", needle);
    return 0;
}

/* Where the tensor info of `name` keeps its type and offset fields. */
static void info_fields(const unsigned char *buf, size_t size, const char *name, size_t *type_at, size_t *offset_at)
{
    size_t at = find_after(buf, size, name);
    uint32_t n_dims;
    memcpy(&n_dims, buf + at, 4);
    *type_at = at + 4 + 8 * n_dims;
    *offset_at = *type_at + 4;
}

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* --- round trips ---------------------------------------------------------- */

static void test_f32_round_trip_is_exact(void **state)
{
    (void)state;
    Config c = test_config(2, 4, 2);
    Model a, b;
    test_model(&a, &c);
    char path[512];
    export_to(&a, FMT_F32, path, sizeof path);
    load_from(path, &b);
    assert_int_equal(b.cfg.d_model, c.d_model);
    assert_int_equal(b.cfg.n_kv_heads, c.n_kv_heads);
    assert_int_equal(b.arena_floats, a.arena_floats);
    assert_memory_equal(b.arena, a.arena, a.arena_floats * sizeof(float));
    int tokens[9];
    test_tokens(tokens, 9, c.vocab, 3);
    float la[64], lb[64];
    logits_of(&a, tokens, 9, la);
    logits_of(&b, tokens, 9, lb);
    assert_memory_equal(la, lb, sizeof la); /* bit-identical */
    model_free(&a);
    model_free(&b);
    unlink(path);
}

/* Each stored matrix holds the engine's quantizer's bytes of the original
 * rows; loading dequantizes them with the engine's codec. */
static void check_quantized(Format fmt)
{
    Config c = test_config(2, 4, 2);
    Model a, b;
    test_model(&a, &c);
    char path[512];
    export_to(&a, fmt, path, sizeof path);
    Checkpoint ck;
    Err e = { 0 };
    if (ckpt_open(&ck, path, &e) < 0)
        fail_msg("%s", e.msg);
    const FormatOps *op = &a.kern->codec[fmt];
    size_t n_quantized = 0, n_f32 = 0;
    unsigned char row[256];
    for (int r = 0; r < CK_ROLE_COUNT; r++) {
        size_t n = ckpt_role_per_layer((CkptRole)r) ? c.n_layers : 1;
        for (size_t l = 0; l < n; l++) {
            CkptTensor t;
            assert_int_equal(ckpt_tensor(&ck, (CkptRole)r, l, &t, &e), 0);
            const float *src = r == CK_EMBED ? a.embed : r == CK_OUTPUT ? a.unembed : r == CK_WQ ? a.layers[l].wq
                               : r == CK_DOWN ? a.layers[l].w_down : NULL;
            if (t.fmt == FMT_F32) {
                n_f32++;
                assert_true(t.rows == 1 || t.cols % format_block_values(fmt) != 0); /* norms, partial blocks */
                continue;
            }
            assert_int_equal(t.fmt, fmt);
            n_quantized++;
            if (!src)
                continue;
            size_t rb = format_row_bytes(fmt, t.cols);
            assert_true(rb <= sizeof row);
            for (size_t i = 0; i < t.rows; i++) {
                op->quantize(row, src + i * t.cols, t.cols);
                assert_memory_equal((const unsigned char *)t.data + i * rb, row, rb);
            }
        }
    }
    ckpt_close(&ck);
    /* 2 layers x (wq wk wv wo gate up) + embed + output; down (cols 48: not whole blocks
     * of 32) stays f32 except in f16; the norms always do */
    const size_t down_f32 = format_block_values(fmt) > 1;
    assert_int_equal(n_quantized, 2 * (7 - down_f32) + 2);
    assert_int_equal(n_f32, 2 * (2 + down_f32) + 1);
    load_from(path, &b);
    /* the matrices stay as stored: layer 1's wk is the quantizer's bytes */
    assert_null(b.layers[1].wk);
    assert_int_equal(b.layers[1].q_wk.fmt, fmt);
    a.kern->codec[fmt].quantize(row, a.layers[1].wk, c.d_model);
    assert_memory_equal(b.layers[1].q_wk.data, row, format_row_bytes(fmt, c.d_model));
    Err de = { 0 };
    assert_int_equal(model_dequantize(&b, &de), 0);
    assert_false(model_has_stored(&b));
    float x[48];
    a.kern->codec[fmt].dequantize(x, row, c.d_model);
    assert_memory_equal(b.layers[1].wk, x, c.d_model * sizeof(float));
    if (down_f32) {
        assert_memory_equal(b.layers[1].w_down, a.layers[1].w_down, c.d_model * c.ffn_dim * sizeof(float));
    } else {
        a.kern->codec[fmt].quantize(row, a.layers[1].w_down, c.ffn_dim);
        a.kern->codec[fmt].dequantize(x, row, c.ffn_dim);
        assert_memory_equal(b.layers[1].w_down, x, c.ffn_dim * sizeof(float));
    }
    model_free(&a);
    model_free(&b);
    unlink(path);
}

/* A model whose matrices stay stored computes, on the exact path
 * (mat_dot off), what its f32 decoding does (the same products, summed in
 * another order); by default q8_0 and q4_0 multiply the activation rounded
 * to q8_0, within that rounding of it and not the same. It counts the
 * stored bytes as read, and, on every kernel table this CPU runs and on
 * both paths, generates the same greedy tokens with a cache as without one:
 * the decode steps dot the stored rows, the uncached passes decode tiles of
 * them to f32. */
static void check_stored_matvec(Format fmt)
{
    Config c = test_config(2, 4, 2);
    c.d_model = 64, c.head_dim = 16, c.ffn_dim = 128; /* whole blocks everywhere: every matrix stored */
    Model a, stored, f32;
    test_model(&a, &c);
    char path[512];
    export_to(&a, fmt, path, sizeof path);
    load_from(path, &stored);
    load_from(path, &f32);
    Err e = { 0 };
    assert_int_equal(model_dequantize(&f32, &e), 0);
    assert_true(stored.layers[0].q_down.data && stored.q_unembed.data);

    int tokens[12];
    test_tokens(tokens, 12, c.vocab, 5);
    const int rounds = fmt == FMT_Q8_0 || fmt == FMT_Q4_0;
    assert_int_equal(stored.mat_dot, INT_DOT_EVEN); /* a checkpoint's default */
    for (size_t n = 1; n <= 12; n += 11) { /* the dot path, then the tile path */
        float ls[64], lf[64], li[64];
        logits_of(&f32, tokens, n, lf);
        logits_of(&stored, tokens, n, li);
        stored.mat_dot = INT_DOT_OFF;
        logits_of(&stored, tokens, n, ls);
        stored.mat_dot = INT_DOT_EVEN;
        double worst = max_rel_diff(ls, lf, c.vocab, 1e-5, "logits");
        assert_true(worst <= 1e-5);
        if (rounds) { /* 8-bit inputs: about 1% a matvec, through two layers */
            assert_true(max_rel_diff(li, lf, c.vocab, 0.05, "logits, integer dots") <= 0.05);
            assert_true(memcmp(li, lf, sizeof li) != 0);
        }
    }
    /* one decode pass reads every stored matrix once, as stored */
    size_t stored_bytes = 0;
    for (size_t l = 0; l < c.n_layers; l++) {
        const LayerWeights *w = &stored.layers[l];
        const QuantMat *q[] = { &w->q_wq, &w->q_wk, &w->q_wv, &w->q_wo, &w->q_gate, &w->q_up, &w->q_down };
        const size_t in[] = { c.d_model, c.d_model, c.d_model, config_q_dim(&c), c.d_model, c.d_model, c.ffn_dim };
        const size_t out[] = { config_q_dim(&c), config_kv_dim(&c), config_kv_dim(&c), c.d_model, c.ffn_dim,
                               c.ffn_dim, c.d_model };
        for (size_t i = 0; i < 7; i++)
            stored_bytes += out[i] * format_row_bytes(q[i]->fmt, in[i]);
    }
    stored_bytes += c.vocab * format_row_bytes(fmt, c.d_model);
    stored_bytes += (2 * c.n_layers + 1) * c.d_model * sizeof(float); /* the norm gains, f32 */
    ForwardState s;
    Counters ctr = { 0 };
    float logits[64];
    assert_int_equal(forward_state_init(&s, &c, 1, 0, &e), 0);
    assert_int_equal(model_forward(&stored, &s, NULL, tokens, 1, 1, 0, logits, &ctr, &e), 0);
    assert_int_equal(ctr.weight_bytes_read, stored_bytes);
    forward_state_free(&s);

    /* cached and uncached: the same greedy tokens on every ISA path */
    const Kernels *tables[8];
    size_t n_tables = kernels_available(tables, 8);
    for (size_t t = 0; t < 2 * n_tables; t++) {
        stored.kern = tables[t % n_tables];
        stored.mat_dot = t < n_tables ? INT_DOT_EVEN : INT_DOT_OFF;
        GenOptions go = { .n_generate = 16 };
        int with[16], without[16];
        KvGeometry geo = model_kv_geometry(&stored, 1);
        KvCache *cache = kv_open("contiguous", &geo, &e);
        assert_non_null(cache);
        assert_int_equal(generate(&stored, cache, tokens, 1, 6, &go, with, NULL, NULL, &e), 0);
        assert_int_equal(generate(&stored, NULL, tokens, 1, 6, &go, without, NULL, NULL, &e), 0);
        if (memcmp(with, without, sizeof with) != 0)
            fail_msg("%s, %s weights, %s: cached and uncached tokens differ", tables[t % n_tables]->isa,
                     format_name(fmt), stored.mat_dot ? "integer dots" : "--int-dot=off");
        kv_free(cache);
    }
    model_free(&a);
    model_free(&stored);
    model_free(&f32);
    unlink(path);
}

/* The integer dot (--int-dot) on every ISA equals the f32 dot of the
 * decoded rows with each decoded vector, to float rounding: the integer
 * sums are exact, only their scaling and adding rounds. G = 1 is a
 * matvec's; G = 2 to 5 a GQA group's (chunks of 4 heads, and a rest of 0
 * to 3: each a loop of its own), their scores ld apart. N values a row:
 * 352 (11 blocks), or 128, a head's, which has loops of its own
 * (qdot_vnni.c). The rows cut into two calls score as in one, as a paged
 * cache's runs must. */
static void check_qdot(Format fmt, size_t N)
{
    enum { ROWS = 37, NMAX = 1024, GMAX = 5, LD = ROWS + 3, CUT = 13 }; /* 37 rows: four streams of 9, one left */
    assert_true(N <= NMAX && N % 32 == 0);
    const FormatOps *ref = &codec_ref[fmt], *q8 = &codec_ref[FMT_Q8_0];
    const size_t wrow = format_row_bytes(fmt, N), xrow = format_row_bytes(FMT_Q8_0, N);
    unsigned char *w = malloc(ROWS * wrow), xq[GMAX * format_row_bytes(FMT_Q8_0, NMAX)];
    float x[NMAX], xr[GMAX][NMAX], wr[NMAX], src[NMAX], want[GMAX][ROWS], got[GMAX * LD];
    assert_non_null(w);
    for (size_t g = 0; g < GMAX; g++) {
        for (size_t i = 0; i < N; i++)
            x[i] = sinf(0.37f * (float)(i + 11 * g)) * (1.0f + (float)((i + g) % 7));
        q8->quantize(xq + g * xrow, x, N);
        q8->dequantize(xr[g], xq + g * xrow, N);
    }
    double mag[GMAX][ROWS];
    for (size_t r = 0; r < ROWS; r++) {
        for (size_t i = 0; i < N; i++)
            src[i] = cosf(0.11f * (float)(i * (r + 1))) * (float)(1 + r % 5);
        ref->quantize(w + r * wrow, src, N);
        ref->dequantize(wr, w + r * wrow, N);
        for (size_t g = 0; g < GMAX; g++) {
            double sum = 0, abs_sum = 0;
            for (size_t i = 0; i < N; i++)
                sum += (double)wr[i] * xr[g][i], abs_sum += fabs((double)wr[i] * xr[g][i]);
            want[g][r] = (float)sum;
            mag[g][r] = abs_sum;
        }
    }
    const Kernels *tables[8];
    size_t n_tables = kernels_available(tables, 8);
    const size_t groups[] = { 1, 2, 3, 4, 5 };
    for (size_t t = 0; t < n_tables; t++)
        for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
            const size_t G = groups[k];
            tables[t]->qdot(got, LD, fmt, w, wrow, ROWS, xq, G, N, NULL);
            for (size_t g = 0; g < G; g++)
                for (size_t r = 0; r < ROWS; r++)
                    if (fabs((double)got[g * LD + r] - want[g][r]) > 1e-6 * mag[g][r])
                        fail_msg("%s qdot %s G=%zu head %zu row %zu: %.9g, the decoded product %.9g",
                                 tables[t]->isa, format_name(fmt), G, g, r, got[g * LD + r], want[g][r]);
            float again[sizeof got / sizeof got[0]];
            const RowsAhead ahead = { w, wrow, wrow }; /* rows to prefetch: the results must not move */
            tables[t]->qdot(again, LD, fmt, w, wrow, ROWS, xq, G, N, &ahead);
            for (size_t g = 0; g < G; g++)
                if (memcmp(again + g * LD, got + g * LD, ROWS * sizeof *got))
                    fail_msg("%s qdot %s G=%zu: head %zu's results change with rows ahead", tables[t]->isa,
                             format_name(fmt), G, g);
            tables[t]->qdot(again, LD, fmt, w, wrow, CUT, xq, G, N, NULL);
            tables[t]->qdot(again + CUT, LD, fmt, w + CUT * wrow, wrow, ROWS - CUT, xq, G, N, NULL);
            for (size_t g = 0; g < G; g++)
                if (memcmp(again + g * LD, got + g * LD, ROWS * sizeof *got))
                    fail_msg("%s qdot %s G=%zu N=%zu: head %zu's results change where the rows are cut",
                             tables[t]->isa, format_name(fmt), G, N, g);
        }
    free(w);
}

/* Four heads of a group, or four rows against one head, sum a 4-bit
 * block's products in 16 bits before they widen them (sums4,
 * qdot_blocks_avx2.h): exact only while 8 products stay below 2^15. So every ISA must
 * take the largest magnitudes exactly: each row's codes all at the largest
 * unsigned code (q4_0's nibble 15, int4's and fp4's 7: 7 and 6, plus the
 * offset) or all at the smallest, each head's codes all -128 or all 127.
 * q8_0 (qdot_vnni.c moves x by 128): codes -127 (top 0x81) or 0 against
 * heads of -127 or 127, the range its quantizer gives (AVX2's sign trick
 * takes no -128 in x). */
static void check_qdot_extremes(Format fmt, unsigned char top)
{
    enum { ROWS = 10, N = 128, G = 4 };
    const size_t wrow = format_row_bytes(fmt, N), xrow = format_row_bytes(FMT_Q8_0, N);
    const size_t wb = format_block_bytes(fmt), xb = format_block_bytes(FMT_Q8_0); /* q4_0, q8_0: f16 scale, codes */
    unsigned char w[ROWS * N * 2], xq[G * N * 2];
    float wr[N], xr[G][N], got[G * ROWS];
    assert_true(wrow <= sizeof w / ROWS && xrow * G <= sizeof xq);
    const unsigned short one = 0x3c00; /* f16 1.0 */
    for (size_t r = 0; r < ROWS; r++) {
        unsigned char *row = w + r * wrow;
        memset(row, r % 2 ? top : 0, wrow);
        if (fmt == FMT_Q4_0 || fmt == FMT_Q8_0)
            for (size_t b = 0; b < N / 32; b++)
                memcpy(row + b * wb, &one, sizeof one);
        else
            memcpy(row + N / 2, &one, sizeof one);
    }
    for (size_t g = 0; g < G; g++)
        for (size_t b = 0; b < N / 32; b++) {
            unsigned char *blk = xq + g * xrow + b * xb;
            memcpy(blk, &one, sizeof one);
            memset(blk + sizeof one, g % 2 ? 127 : fmt == FMT_Q8_0 ? 0x81 : 0x80, xb - sizeof one);
        }
    for (size_t g = 0; g < G; g++)
        codec_ref[FMT_Q8_0].dequantize(xr[g], xq + g * xrow, N);
    const Kernels *tables[8];
    size_t n_tables = kernels_available(tables, 8);
    const size_t groups[] = { 1, G }; /* four rows against one head at a time; four heads at a time */
    for (size_t t = 0; t < n_tables; t++)
        for (size_t k = 0; k < 2; k++) {
            tables[t]->qdot(got, ROWS, fmt, w, wrow, ROWS, xq, groups[k], N, NULL);
            for (size_t r = 0; r < ROWS; r++) {
                codec_ref[fmt].dequantize(wr, w + r * wrow, N);
                for (size_t g = 0; g < groups[k]; g++) {
                    double want = 0;
                    for (size_t i = 0; i < N; i++)
                        want += (double)wr[i] * xr[g][i];
                    if (fabs((double)got[g * ROWS + r] - want) > 1e-6 * fabs(want))
                        fail_msg("%s qdot %s G=%zu, extreme codes, head %zu row %zu: %.9g, the decoded product %.9g",
                                 tables[t]->isa, format_name(fmt), groups[k], g, r, got[g * ROWS + r], want);
                }
            }
        }
}

static void test_qdot_extremes(void **state)
{
    (void)state;
    check_qdot_extremes(FMT_Q4_0, 0xff);
    check_qdot_extremes(FMT_Q8_0, 0x81);
    check_qdot_extremes(FMT_INT4, 0x77);
    check_qdot_extremes(FMT_FP4, 0x77);
}

/* A group of four heads over rows longer than the four-head loop keeps
 * on the stack (129 blocks): q8_0 takes the former loop, the 4-bit formats
 * the reference; every ISA equals the decoded product. */
static void test_qdot_long_group(void **state)
{
    (void)state;
    enum { ROWS = 3, N = 129 * 32, G = 4 };
    static float x[G][N], w[N], xr[G][N];
    static unsigned char xq[G * (N / 32) * 34], rows[ROWS * (N / 32) * 34];
    const Format fmts[] = { FMT_Q8_0, FMT_Q4_0 };
    const Kernels *tables[8];
    const size_t n_tables = kernels_available(tables, 8), xrow = format_row_bytes(FMT_Q8_0, N);
    for (size_t g = 0; g < G; g++) {
        for (size_t i = 0; i < N; i++)
            x[g][i] = sinf(0.013f * (float)(i * (g + 1)));
        codec_ref[FMT_Q8_0].quantize(xq + g * xrow, x[g], N);
        codec_ref[FMT_Q8_0].dequantize(xr[g], xq + g * xrow, N);
    }
    for (size_t f = 0; f < 2; f++) {
        const size_t rb = format_row_bytes(fmts[f], N);
        for (size_t r = 0; r < ROWS; r++) {
            for (size_t i = 0; i < N; i++)
                w[i] = cosf(0.07f * (float)(i + 13 * r));
            codec_ref[fmts[f]].quantize(rows + r * rb, w, N);
        }
        for (size_t t = 0; t < n_tables; t++) {
            float got[G * ROWS];
            tables[t]->qdot(got, ROWS, fmts[f], rows, rb, ROWS, xq, G, N, NULL);
            for (size_t r = 0; r < ROWS; r++) {
                codec_ref[fmts[f]].dequantize(w, rows + r * rb, N);
                for (size_t g = 0; g < G; g++) {
                    double want = 0, mag = 0;
                    for (size_t i = 0; i < N; i++)
                        want += (double)w[i] * xr[g][i], mag += fabs((double)w[i] * xr[g][i]);
                    if (fabs((double)got[g * ROWS + r] - want) > 1e-6 * mag)
                        fail_msg("%s qdot %s, 129 blocks, head %zu row %zu: %.9g, the decoded product %.9g",
                                 tables[t]->isa, format_name(fmts[f]), g, r, got[g * ROWS + r], want);
                }
            }
        }
    }
}

static void test_qdot_q8_0(void **state)
{
    (void)state;
    check_qdot(FMT_Q8_0, 352);
    check_qdot(FMT_Q8_0, 128);
    check_qdot(FMT_Q8_0, 1024); /* long rows: the matvec's own prefetch (qdot_avx2.c) */
}
static void test_qdot_q4_0(void **state)
{
    (void)state;
    check_qdot(FMT_Q4_0, 352);
    check_qdot(FMT_Q4_0, 128);
    check_qdot(FMT_Q4_0, 1024); /* long rows: the matvec's own prefetch (qdot_avx2.c) */
}
static void test_qdot_int4(void **state) { (void)state; check_qdot(FMT_INT4, 352); check_qdot(FMT_INT4, 128); }
static void test_qdot_fp4(void **state) { (void)state; check_qdot(FMT_FP4, 352); check_qdot(FMT_FP4, 128); }

static void test_stored_q8_0_matvec(void **state) { (void)state; check_stored_matvec(FMT_Q8_0); }
static void test_stored_q4_0_matvec(void **state) { (void)state; check_stored_matvec(FMT_Q4_0); }
static void test_stored_f16_matvec(void **state) { (void)state; check_stored_matvec(FMT_F16); }

static void test_q8_0_bytes_are_the_engines(void **state) { (void)state; check_quantized(FMT_Q8_0); }
static void test_q4_0_bytes_are_the_engines(void **state) { (void)state; check_quantized(FMT_Q4_0); }
static void test_f16_bytes_are_the_engines(void **state) { (void)state; check_quantized(FMT_F16); }

/* --- llama2.c ---------------------------------------------------------------- */

static void put_floats(FILE *f, const float *x, size_t n)
{
    assert_int_equal(fwrite(x, sizeof(float), n, f), n);
}

/* m in llama2.c's legacy layout; tied: the header's vocab positive and no
 * wcls (m's unembed must then equal its embed). */
static void write_llama2c(const Model *m, const char *path, int tied)
{
    const Config *c = &m->cfg;
    size_t d = c->d_model, q = config_q_dim(c), kv = config_kv_dim(c), f = c->ffn_dim, L = c->n_layers;
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    int32_t h[7] = { (int32_t)d, (int32_t)f, (int32_t)L, (int32_t)c->n_heads, (int32_t)c->n_kv_heads,
                     tied ? (int32_t)c->vocab : -(int32_t)c->vocab, (int32_t)c->max_seq_len };
    assert_int_equal(fwrite(h, 4, 7, fp), 7);
    put_floats(fp, m->embed, c->vocab * d);
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].attn_norm, d);
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].wq, q * d);
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].wk, kv * d);
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].wv, kv * d);
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].wo, d * q);
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].ffn_norm, d);
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].w_gate, f * d); /* w1 */
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].w_down, d * f); /* w2 */
    for (size_t l = 0; l < L; l++) put_floats(fp, m->layers[l].w_up, f * d);   /* w3 */
    put_floats(fp, m->final_norm, d);
    size_t freq = c->max_seq_len * c->head_dim; /* freq_cis_real and _imag, [seq_len][head_size/2] each */
    float *zeros = calloc(freq, sizeof(float));
    put_floats(fp, zeros, freq);
    free(zeros);
    if (!tied)
        put_floats(fp, m->unembed, c->vocab * d);
    fclose(fp);
}

static void check_llama2c(int tied)
{
    Config c = test_config(2, 4, 2);
    c.max_seq_len = 64;
    Model a, b;
    test_model(&a, &c);
    if (tied) /* llama2.c's shared classifier: make the engine's model the same */
        memcpy(a.unembed, a.embed, c.vocab * c.d_model * sizeof(float));
    /* norms that are not all ones, so a misplaced norm shows */
    for (size_t i = 0; i < c.d_model; i++) {
        a.layers[0].attn_norm[i] = 1.0f + 0.01f * (float)i;
        a.layers[1].ffn_norm[i] = 1.0f - 0.01f * (float)i;
        a.final_norm[i] = 0.5f + 0.02f * (float)i;
    }
    char path[512];
    temp_path(path, sizeof path, ".bin");
    write_llama2c(&a, path, tied);
    load_from(path, &b);
    assert_int_equal(b.cfg.max_seq_len, 64);
    assert_memory_equal(b.arena, a.arena, a.arena_floats * sizeof(float));
    int prompt[5], out_a[12], out_b[12];
    test_tokens(prompt, 5, c.vocab, 1);
    GenOptions go = { .n_generate = 12 };
    Err e = { 0 };
    assert_int_equal(generate(&a, NULL, prompt, 1, 5, &go, out_a, NULL, NULL, &e), 0);
    assert_int_equal(generate(&b, NULL, prompt, 1, 5, &go, out_b, NULL, NULL, &e), 0);
    assert_memory_equal(out_a, out_b, sizeof out_a);
    model_free(&a);
    model_free(&b);
    unlink(path);
}

static void test_llama2c_loads_and_generates_the_same(void **state) { (void)state; check_llama2c(0); }
static void test_llama2c_shared_classifier(void **state) { (void)state; check_llama2c(1); }

static void test_llama2c_malformed(void **state)
{
    (void)state;
    char path[512];
    temp_path(path, sizeof path, ".bin");
    Checkpoint ck;
    Err e = { 0 };
    int32_t h[7] = { 32, 48, 2, 4, 2, -64, 64 };
    write_all(path, h, sizeof h); /* a header and no tensors */
    assert_int_equal(ckpt_open(&ck, path, &e), -1);
    assert_non_null(strstr(e.msg, "neither a GGUF file nor a llama2.c checkpoint"));
    h[3] = 5; /* 32 is not a multiple of 5 heads */
    write_all(path, h, sizeof h);
    assert_int_equal(ckpt_open(&ck, path, &e), -1);
    assert_non_null(strstr(e.msg, "does not describe a model"));
    int32_t huge[7] = { 0x7fffffff, 0x7fffffff, 0x7fffffff, 1, 1, 0x7fffffff, 0x7fffffff };
    write_all(path, huge, sizeof huge); /* sizes that overflow: refused, not allocated */
    assert_int_equal(ckpt_open(&ck, path, &e), -1);
    uint32_t ak42[2] = { 0x616b3432u, 1 };
    write_all(path, ak42, sizeof ak42);
    assert_int_equal(ckpt_open(&ck, path, &e), -1);
    assert_non_null(strstr(e.msg, "ak42"));
    write_all(path, "", 0);
    assert_int_equal(ckpt_open(&ck, path, &e), -1);
    assert_non_null(strstr(e.msg, path));
    unlink(path);
    assert_int_equal(ckpt_open(&ck, path, &e), -1); /* missing */
    assert_int_equal(e.kind, ERR_RUNTIME);
}

/* --- RoPE orders ------------------------------------------------------------ */

/* Hugging Face's rotate_half RoPE: pairs (i, i + head_dim/2). */
static void rope_halves(float *v, size_t n_heads, size_t hd, size_t pos, double theta)
{
    for (size_t h = 0; h < n_heads; h++)
        for (size_t i = 0; i < hd / 2; i++) {
            double angle = (double)pos * pow(theta, -(double)(2 * i) / (double)hd);
            float cs = (float)cos(angle), sn = (float)sin(angle);
            float a = v[h * hd + i], b = v[h * hd + i + hd / 2];
            v[h * hd + i] = a * cs - b * sn;
            v[h * hd + i + hd / 2] = a * sn + b * cs;
        }
}

static void matvec(float *y, const float *w, const float *x, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        float s = 0;
        for (size_t i = 0; i < cols; i++)
            s += w[r * cols + i] * x[i];
        y[r] = s;
    }
}

/* A checkpoint in halves order (Hugging Face), its Q and K rows permuted as
 * llama.cpp's converter does, runs under the engine's pair-order RoPE with
 * the same attention scores; without the permutation it does not. */
static void test_rope_permutation_makes_halves_run_as_pairs(void **state)
{
    (void)state;
    enum { H = 2, HD = 8, D = 12, QD = H * HD };
    float wq[QD * D], wk[QD * D], x[D], y[D];
    for (size_t i = 0; i < QD * D; i++) {
        wq[i] = (float)sin(0.37 * (double)i + 0.1);
        wk[i] = (float)cos(0.23 * (double)i + 0.2);
    }
    for (size_t i = 0; i < D; i++) {
        x[i] = (float)sin(1.3 * (double)i);
        y[i] = (float)cos(0.7 * (double)i);
    }
    const size_t pq = 7, pk = 3;
    float q[QD], k[QD], qe[QD], ke[QD], wq_p[QD * D], wk_p[QD * D];
    matvec(q, wq, x, QD, D);
    matvec(k, wk, y, QD, D);
    rope_halves(q, H, HD, pq, 10000.0);
    rope_halves(k, H, HD, pk, 10000.0);
    memcpy(wq_p, wq, sizeof wq);
    memcpy(wk_p, wk, sizeof wk);
    assert_int_equal(rope_rows_halves_to_pairs(wq_p, H, HD, D), 0);
    assert_int_equal(rope_rows_halves_to_pairs(wk_p, H, HD, D), 0);
    matvec(qe, wq_p, x, QD, D);
    matvec(ke, wk_p, y, QD, D);
    rope_ref(qe, H, HD, pq, 10000.0, NULL);
    rope_ref(ke, H, HD, pk, 10000.0, NULL);
    for (size_t h = 0; h < H; h++) {
        double s_hf = 0, s_engine = 0;
        for (size_t i = 0; i < HD; i++) {
            s_hf += (double)q[h * HD + i] * k[h * HD + i];
            s_engine += (double)qe[h * HD + i] * ke[h * HD + i];
        }
        assert_true(fabs(s_hf - s_engine) < 1e-4 * (1 + fabs(s_hf)));
        /* the rotated vectors themselves agree up to the permutation */
        for (size_t i = 0; i < HD / 2; i++) {
            assert_true(fabsf(qe[h * HD + 2 * i] - q[h * HD + i]) < 1e-4f);
            assert_true(fabsf(qe[h * HD + 2 * i + 1] - q[h * HD + i + HD / 2]) < 1e-4f);
        }
    }
    /* unpermuted rows under the engine's RoPE give other scores: the test can fail */
    float qn[QD], kn[QD];
    matvec(qn, wq, x, QD, D);
    matvec(kn, wk, y, QD, D);
    rope_ref(qn, H, HD, pq, 10000.0, NULL);
    rope_ref(kn, H, HD, pk, 10000.0, NULL);
    double s_hf = 0, s_wrong = 0;
    for (size_t i = 0; i < HD; i++) {
        s_hf += (double)q[i] * k[i];
        s_wrong += (double)qn[i] * kn[i];
    }
    assert_true(fabs(s_hf - s_wrong) > 1e-3);
    /* and the inverse undoes it */
    assert_int_equal(rope_rows_pairs_to_halves(wq_p, H, HD, D), 0);
    assert_memory_equal(wq_p, wq, sizeof wq);
}

/* --- malformed GGUF ----------------------------------------------------------- */

static void test_valid_file_opens(void **state)
{
    (void)state;
    size_t size;
    unsigned char *buf = valid_gguf(&size, FMT_F32);
    Err e;
    if (open_bytes(buf, size, &e) < 0)
        fail_msg("%s", e.msg);
    GgufFile g;
    assert_int_equal(gguf_parse(&g, buf, size, &e), 0);
    assert_int_equal(g.version, 3);
    assert_int_equal(g.alignment, 32);
    assert_int_equal(g.n_tensors, 3 + 9 * 2);
    for (size_t i = 0; i < g.n_tensors; i++)
        assert_int_equal((size_t)(g.tensors[i].data - buf) % 32, 0);
    uint64_t v = 0;
    assert_int_equal(gguf_get_uint(&g, "llama.embedding_length", &v, &e), 1);
    assert_int_equal(v, 32);
    GgufStr s;
    assert_int_equal(gguf_get_str(&g, "llama.embedding_length", &s, &e), -1); /* a u32, not a string */
    assert_int_equal(gguf_get_str(&g, "no.such.key", &s, &e), 0);
    gguf_close(&g);
    free(buf);
}

static void test_truncated_anywhere(void **state)
{
    (void)state;
    size_t size;
    unsigned char *buf = valid_gguf(&size, FMT_Q8_0);
    for (size_t n = 0; n < size; n++) {
        unsigned char *cut = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past them */
        memcpy(cut, buf, n);
        Err e;
        if (open_bytes(n ? cut : NULL, n, &e) == 0)
            fail_msg("a file cut to %zu of %zu bytes opened", n, size);
        free(cut);
    }
    free(buf);
}

static void test_magic_and_version(void **state)
{
    (void)state;
    size_t size;
    unsigned char *buf = valid_gguf(&size, FMT_F32);
    buf[0] = 'X';
    expect_error(buf, size, "not a GGUF file");
    buf[0] = 'G';
    put_u32(buf + 4, 1);
    expect_error(buf, size, "GGUF version 1");
    put_u32(buf + 4, 4);
    expect_error(buf, size, "GGUF version 4");
    put_u32(buf + 4, 0x03000000u);
    expect_error(buf, size, "big-endian");
    put_u32(buf + 4, 2); /* version 2 has the same layout */
    Err e;
    assert_int_equal(open_bytes(buf, size, &e), 0);
    free(buf);
}

static void test_absurd_counts(void **state)
{
    (void)state;
    size_t size;
    unsigned char *buf = valid_gguf(&size, FMT_F32);
    unsigned char orig[16];
    memcpy(orig, buf + 8, 16);
    put_u64(buf + 8, (uint64_t)1 << 62); /* n_tensors */
    expect_error(buf, size, "cannot fit");
    memcpy(buf + 8, orig, 16);
    put_u64(buf + 16, UINT64_MAX); /* n_kv */
    expect_error(buf, size, "cannot fit");
    memcpy(buf + 8, orig, 16);
    put_u64(buf + 16, 1000); /* more entries than there are: runs into the infos, then off the end */
    Err e;
    assert_int_equal(open_bytes(buf, size, &e), -1);
    memcpy(buf + 8, orig, 16);
    put_u64(buf + 24, (uint64_t)1 << 40); /* the first key's length */
    expect_error(buf, size, "runs past the end of the file");
    free(buf);
}

static void test_tensor_offsets_and_types(void **state)
{
    (void)state;
    size_t size, type_at, off_at;
    unsigned char *buf = valid_gguf(&size, FMT_F32);
    unsigned char *work = malloc(size);
    info_fields(buf, size, "output.weight", &type_at, &off_at);
    uint64_t off;
    memcpy(&off, buf + off_at, 8);

    memcpy(work, buf, size);
    put_u64(work + off_at, off + 32 * 1024 * 1024); /* beyond the file */
    expect_error(work, size, "run past the end of the file");
    memcpy(work, buf, size);
    put_u64(work + off_at, UINT64_MAX - 31); /* an offset that would wrap */
    expect_error(work, size, "run past the end of the file");
    memcpy(work, buf, size);
    put_u64(work + off_at, off + 4); /* misaligned */
    expect_error(work, size, "not a multiple of the alignment");
    memcpy(work, buf, size);
    put_u32(work + type_at, 12); /* Q4_K */
    expect_error(work, size, "tensor 'output.weight' has type Q4_K");
    memcpy(work, buf, size);
    put_u32(work + type_at, 999);
    expect_error(work, size, "has type type 999");
    memcpy(work, buf, size);
    put_u32(work + type_at, GGML_TYPE_Q8_0); /* fewer bytes than the f32 there: the rest is no tensor's */
    expect_error(work, size, "belong to no tensor");
    memcpy(work, buf, size);
    put_u64(work + off_at, 0); /* on top of the first tensor */
    expect_error(work, size, "overlaps tensor");
    /* dimensions: 2^40 rows */
    memcpy(work, buf, size);
    put_u64(work + type_at - 8, (uint64_t)1 << 40);
    expect_error(work, size, "cannot fit");
    free(work);
    free(buf);
}

static void test_duplicate_missing_and_unknown_tensors(void **state)
{
    (void)state;
    size_t size;
    unsigned char *buf = valid_gguf(&size, FMT_F32);
    unsigned char *work = malloc(size);
    memcpy(work, buf, size);
    size_t at = find_after(work, size, "blk.0.attn_k.weight") - strlen("blk.0.attn_k.weight");
    memcpy(work + at, "blk.0.attn_q.weight", 19); /* same length: now two attn_q */
    expect_error(work, size, "tensor 'blk.0.attn_q.weight' appears twice");
    memcpy(work, buf, size);
    at = find_after(work, size, "blk.1.ffn_up.weight") - strlen("blk.1.ffn_up.weight");
    memcpy(work + at, "blk.1.ffn_xx.weight", 19);
    expect_error(work, size, "tensor 'blk.1.ffn_up.weight' is missing");
    memcpy(work, buf, size);
    at = find_after(work, size, "llama.context_length") - 1;
    work[at] = 'X'; /* llama.context_lengtX: an unknown key, and context_length missing */
    expect_error(work, size, "metadata 'llama.context_length' is missing");
    memcpy(work, buf, size);
    at = find_after(work, size, "output.weight") - strlen("output.weight");
    memcpy(work + at, "outpux.weight", 13); /* the classifier now tied to the embedding ... */
    expect_error(work, size, "tensor 'outpux.weight' is not part of a 2-layer llama model");
    free(work);
    Err e;
    free(buf);

    /* a tensor kvscope does not know, and a duplicate key, written by the writer */
    char path[512];
    temp_path(path, sizeof path, ".gguf");
    GgufWriter *w = gguf_writer_new(path, 0);
    gguf_writer_str(w, "general.architecture", "llama");
    gguf_writer_str(w, "general.architecture", "llama");
    assert_int_equal(gguf_writer_finish(w, &e), 0);
    gguf_writer_free(w);
    size_t n;
    unsigned char *dup = read_all(path, &n);
    expect_error(dup, n, "metadata key 'general.architecture' appears twice");
    free(dup);
    unlink(path);
}

static void test_dimensions_disagree_with_metadata(void **state)
{
    (void)state;
    size_t size;
    unsigned char *buf = valid_gguf(&size, FMT_F32);
    /* the value of llama.feed_forward_length: after the key, a u32 type and the u32 */
    size_t at = find_after(buf, size, "llama.feed_forward_length");
    put_u32(buf + at + 4, 64);
    expect_error(buf, size, "tensor 'blk.0.ffn_gate.weight' has dimensions 32 x 48 x 1 x 1, the metadata implies 32 x 64");
    put_u32(buf + at + 4, 48);
    at = find_after(buf, size, "llama.attention.head_count_kv");
    put_u32(buf + at + 4, 3);
    expect_error(buf, size, "3 KV heads do not divide 4 query heads");
    put_u32(buf + at + 4, 2);
    at = find_after(buf, size, "general.architecture");
    memcpy(buf + at + 4 + 8, "gemma", 5);
    expect_error(buf, size, "architecture 'gemma'");
    free(buf);
}

/* Every value type, arrays of strings and arrays of arrays, in a file
 * built here byte by byte; then an array whose count is absurd. */
static size_t kv_header(unsigned char *p, const char *key, uint32_t type)
{
    size_t n = strlen(key);
    put_u64(p, n);
    memcpy(p + 8, key, n);
    put_u32(p + 8 + n, type);
    return 12 + n;
}

static void test_every_value_type(void **state)
{
    (void)state;
    unsigned char buf[1024] = { 0 };
    size_t at = 24, n_kv = 0;
    memcpy(buf, "GGUF", 4);
    put_u32(buf + 4, 3);
    const uint32_t fixed[] = { GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32,
                               GGUF_BOOL, GGUF_U64, GGUF_I64, GGUF_F64 };
    const size_t widths[] = { 1, 1, 2, 2, 4, 4, 4, 1, 8, 8, 8 };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++, n_kv++) {
        char key[16];
        snprintf(key, sizeof key, "k.%s", gguf_value_type_name(fixed[i]));
        at += kv_header(buf + at, key, fixed[i]);
        memset(buf + at, fixed[i] == GGUF_BOOL ? 1 : 0xff, widths[i]); /* -1 for the signed types */
        if (fixed[i] == GGUF_F32) { float f = 2.5f; memcpy(buf + at, &f, 4); }
        if (fixed[i] == GGUF_F64) { double d = -0.25; memcpy(buf + at, &d, 8); }
        at += widths[i];
    }
    at += kv_header(buf + at, "k.string", GGUF_STRING), n_kv++;
    put_u64(buf + at, 3), memcpy(buf + at + 8, "abc", 3), at += 11;
    at += kv_header(buf + at, "k.strings", GGUF_ARRAY), n_kv++;
    put_u32(buf + at, GGUF_STRING), put_u64(buf + at + 4, 2), at += 12;
    put_u64(buf + at, 1), buf[at + 8] = 'x', at += 9;
    put_u64(buf + at, 0), at += 8;
    at += kv_header(buf + at, "k.nested", GGUF_ARRAY), n_kv++;
    put_u32(buf + at, GGUF_ARRAY), put_u64(buf + at + 4, 2), at += 12;
    for (int j = 0; j < 2; j++) {
        put_u32(buf + at, GGUF_I16), put_u64(buf + at + 4, 3), at += 12 + 6;
    }
    size_t count_at = 0;
    at += kv_header(buf + at, "k.u32s", GGUF_ARRAY), n_kv++;
    put_u32(buf + at, GGUF_U32), count_at = at + 4, put_u64(buf + at + 4, 4), at += 12 + 16;
    put_u64(buf + 16, n_kv);
    GgufFile g;
    Err e = { 0 };
    if (gguf_parse(&g, buf, at, &e) < 0)
        fail_msg("%s", e.msg);
    assert_int_equal(g.n_kv, n_kv);
    uint64_t u;
    double f;
    GgufStr s;
    GgufValueType et;
    assert_int_equal(gguf_get_uint(&g, "k.u64", &u, &e), 1);
    assert_true(u == UINT64_MAX);
    assert_int_equal(gguf_get_uint(&g, "k.i32", &u, &e), -1); /* -1 is not a size */
    assert_non_null(strstr(e.msg, "must not be negative"));
    assert_int_equal(gguf_get_float(&g, "k.f32", &f, &e), 1);
    assert_true(f == 2.5);
    assert_int_equal(gguf_get_float(&g, "k.f64", &f, &e), 1);
    assert_true(f == -0.25);
    assert_int_equal(gguf_get_float(&g, "k.i8", &f, &e), 1);
    assert_true(f == -1.0);
    assert_int_equal(gguf_get_uint(&g, "k.bool", &u, &e), -1);
    assert_int_equal(gguf_get_str(&g, "k.string", &s, &e), 1);
    assert_true(gguf_str_eq(s, "abc"));
    assert_int_equal(gguf_get_array(&g, "k.strings", &et, &u, &e), 1);
    assert_int_equal(et, GGUF_STRING);
    assert_int_equal(u, 2);
    assert_int_equal(gguf_get_array(&g, "k.nested", &et, &u, &e), 1);
    assert_int_equal(et, GGUF_ARRAY);
    gguf_close(&g);
    /* not a llama model: no architecture */
    expect_error(buf, at, "general.architecture' is missing");
    put_u64(buf + count_at, (uint64_t)1 << 61); /* u32 elements: 2^63 bytes */
    assert_int_equal(gguf_parse(&g, buf, at, &e), -1);
    assert_non_null(strstr(e.msg, "cannot fit"));
    put_u64(buf + count_at, 4);
    put_u32(buf + count_at - 4, 77); /* an element type that does not exist */
    assert_int_equal(gguf_parse(&g, buf, at, &e), -1);
    assert_non_null(strstr(e.msg, "unknown value type 77"));
}

/* The writer's metadata reads back; a custom alignment is honoured. */
static void test_writer_metadata_and_alignment(void **state)
{
    (void)state;
    char path[512];
    temp_path(path, sizeof path, ".gguf");
    GgufWriter *w = gguf_writer_new(path, 64);
    const char *tokens[] = { "<s>", "</s>", "hello" };
    gguf_writer_str_array(w, "tokenizer.ggml.tokens", tokens, 3);
    gguf_writer_f32(w, "x.f", 0.5f);
    const uint64_t ne[2] = { 32, 3 };
    gguf_writer_tensor(w, "a", FMT_F32, 1, ne);
    gguf_writer_tensor(w, "b", FMT_Q8_0, 2, ne);
    Err e = { 0 };
    float a[32] = { 1.0f };
    unsigned char b[3 * 34] = { 7 };
    assert_int_equal(gguf_writer_begin_data(w, &e), 0);
    assert_int_equal(gguf_writer_data(w, a, sizeof a - 4, &e), -1); /* the wrong size */
    assert_int_equal(gguf_writer_data(w, a, sizeof a, &e), 0);
    assert_int_equal(gguf_writer_finish(w, &e), -1); /* b not written yet */
    assert_int_equal(gguf_writer_data(w, b, sizeof b, &e), 0);
    assert_int_equal(gguf_writer_finish(w, &e), 0);
    gguf_writer_free(w);
    GgufFile g;
    if (gguf_open(&g, path, &e) < 0)
        fail_msg("%s", e.msg);
    assert_int_equal(g.alignment, 64);
    assert_int_equal(g.data_offset % 64, 0);
    GgufValueType et;
    uint64_t n;
    assert_int_equal(gguf_get_array(&g, "tokenizer.ggml.tokens", &et, &n, &e), 1);
    assert_int_equal(et, GGUF_STRING);
    assert_int_equal(n, 3);
    const GgufTensor *tb = gguf_find_tensor(&g, "b");
    assert_non_null(tb);
    assert_int_equal(tb->offset, 128); /* a's 128 bytes, then b at the next multiple of 64 */
    assert_int_equal(tb->fmt, FMT_Q8_0);
    assert_memory_equal(tb->data, b, sizeof b);
    assert_int_equal(tb->data + tb->bytes - g.map.data, g.map.size); /* nothing after the last tensor */
    gguf_close(&g);
    unlink(path);
}

/* Crashers and odd inputs the fuzzer found, kept as files: each opens or
 * fails with a message, and never crashes (run under the sanitizers too). */
static void test_fuzz_regressions(void **state)
{
    (void)state;
    DIR *dir = opendir(FUZZ_DIR);
    if (!dir)
        fail_msg("%s is missing (run the tests from the repository's root)", FUZZ_DIR);
    size_t n = 0;
    for (struct dirent *d; (d = readdir(dir));) {
        if (d->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", FUZZ_DIR, d->d_name);
        size_t size;
        unsigned char *buf = read_all(path, &size);
        Err e;
        (void)open_bytes(buf, size, &e);
        free(buf);
        n++;
    }
    closedir(dir);
    assert_true(n > 0);
}

/* --- the tokenizer a checkpoint carries ------------------------------------ */

/* A hand-made SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte
 * tokens (ids 3 + byte), then pieces whose joins the expectations below
 * work out by hand. */
#define HV_N 271
#define HV_M "\xe2\x96\x81" /* U+2581, the space marker */

typedef struct {
    char text[HV_N][16];
    const unsigned char *piece[HV_N];
    size_t len[HV_N];
    float score[HV_N];
    int type[HV_N];
} HandVocab;

/* raw_spaces: pieces written with ' ' for the marker, as llama2.c does. */
static void hand_vocab(HandVocab *h, int raw_spaces)
{
    static const struct { const char *piece; float score; } words[] = {
        { HV_M, -10 },      { "a", -10 },      { "b", -10 },   { "c", -10 },  { "ab", -3 },  { "bc", -2 },
        { HV_M "a", -4 },   { "abc", -1 },     { HV_M "ab", -5 }, { "\xc3\xa9", -10 }, { "cc", -6 },
        { HV_M "c", -7 },
    };
    memset(h, 0, sizeof *h);
    snprintf(h->text[0], 16, "<unk>");
    snprintf(h->text[1], 16, "<s>");
    snprintf(h->text[2], 16, "</s>");
    h->type[0] = SPM_UNKNOWN;
    h->type[1] = h->type[2] = SPM_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(h->text[3 + b], 16, "<0x%02X>", b);
        h->type[3 + b] = SPM_BYTE;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        const char *w = words[i].piece;
        char *o = h->text[259 + i];
        if (raw_spaces && strncmp(w, HV_M, 3) == 0) /* the marker only ever leads here */
            snprintf(o, 16, " %s", w + 3);
        else
            snprintf(o, 16, "%s", w);
        h->score[259 + i] = words[i].score;
        h->type[259 + i] = SPM_NORMAL;
    }
    for (size_t i = 0; i < HV_N; i++) {
        h->piece[i] = (const unsigned char *)h->text[i];
        h->len[i] = strlen(h->text[i]);
    }
}

static SpmVocab spm_of(const HandVocab *h)
{
    return (SpmVocab){ .n = HV_N, .piece = h->piece, .len = h->len, .score = h->score, .type = h->type,
                       .bos = 1, .eos = 2, .unk = 0, .add_bos = 1, .add_space_prefix = 1 };
}

/* The ids the vocabulary gives, worked out by hand. */
static const struct {
    const char *text;
    size_t n;
    int ids[5];
} hand_cases[] = {
    /* ▁ a b c: bc (-2) beats ab (-3) and ▁a (-4); then a+bc = abc (-1); ▁abc is no piece */
    { "abc", 3, { 1, 259, 266 } },
    /* ▁ a b ▁ c: ab (-3), then ▁ab (-5), then ▁c (-7) */
    { "ab c", 3, { 1, 267, 270 } },
    /* ▁ c c c: the two cc (-6) tie: the leftmost joins; ▁c (-7) and ccc then cannot */
    { "ccc", 4, { 1, 259, 269, 262 } },
    /* é is a piece; z is none: its byte token 3 + 0x7a */
    { "a\xc3\xa9z", 4, { 1, 265, 268, 125 } },
    /* ü (c3 bc) is no piece: two byte tokens */
    { "\xc3\xbc", 4, { 1, 259, 3 + 0xc3, 3 + 0xbc } },
    { "", 1, { 1 } },
};

/* Every hand case encodes to its ids, and their pieces decode to the text
 * with the prefix space in front. */
static void check_hand_encodes(const Tokenizer *t)
{
    for (size_t c = 0; c < sizeof hand_cases / sizeof hand_cases[0]; c++) {
        const char *text = hand_cases[c].text;
        int *ids;
        size_t n;
        Err e = { 0 };
        assert_int_equal(tokenizer_encode(t, text, strlen(text), &ids, &n, &e), 0);
        if (n != hand_cases[c].n || memcmp(ids, hand_cases[c].ids, n * sizeof *ids) != 0)
            fail_msg("'%s': %zu ids (first %d, last %d), want %zu", text, n, n ? ids[0] : -1,
                     n ? ids[n - 1] : -1, hand_cases[c].n);
        char back[64] = "";
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            size_t len;
            const unsigned char *p = tokenizer_piece(t, ids[i], &len);
            assert_non_null(p);
            assert_true(at + len < sizeof back);
            memcpy(back + at, p, len);
            at += len;
        }
        back[at] = '\0';
        char want[64];
        snprintf(want, sizeof want, "%s%s", *text ? " " : "", text);
        assert_string_equal(back, want);
        free(ids);
    }
}

static void test_spm_hand_vocabulary(void **state)
{
    (void)state;
    HandVocab h;
    hand_vocab(&h, 0);
    SpmVocab v = spm_of(&h);
    Tokenizer *t;
    Err e = { 0 };
    assert_int_equal(tokenizer_from_vocab(&t, "hand", &v, &e), 0);
    assert_int_equal(tokenizer_vocab(t), HV_N);
    check_hand_encodes(t);
    tokenizer_free(t);

    /* no byte tokens: a symbol that is no piece becomes the unknown token */
    for (int b = 0; b < 256; b++)
        h.type[3 + b] = SPM_UNUSED;
    assert_int_equal(tokenizer_from_vocab(&t, "hand", &v, &e), 0);
    int *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(t, "az", 2, &ids, &n, &e), 0);
    assert_int_equal(n, 3);
    assert_int_equal(ids[1], 265);
    assert_int_equal(ids[2], 0);
    free(ids);
    tokenizer_free(t);
    v.unk = -1; /* and none of those either: an error, not a guess */
    h.type[0] = SPM_NORMAL;
    assert_int_equal(tokenizer_from_vocab(&t, "hand", &v, &e), 0);
    assert_int_equal(tokenizer_encode(t, "az", 2, &ids, &n, &e), -1);
    assert_non_null(strstr(e.msg, "byte 0x7a has no token"));
    tokenizer_free(t);

    /* not a vocabulary: each refused with one line */
    hand_vocab(&h, 0);
    v = spm_of(&h);
    h.type[5] = 9;
    assert_int_equal(tokenizer_from_vocab(&t, "hand", &v, &e), -1);
    assert_non_null(strstr(e.msg, "token 5 has type 9"));
    h.type[5] = SPM_BYTE;
    h.text[5][1] = 'y'; /* "<yx02>" */
    assert_int_equal(tokenizer_from_vocab(&t, "hand", &v, &e), -1);
    assert_non_null(strstr(e.msg, "not written <0xXX>"));
    hand_vocab(&h, 0);
    v.bos = HV_N;
    assert_int_equal(tokenizer_from_vocab(&t, "hand", &v, &e), -1);
    assert_non_null(strstr(e.msg, "BOS token id 271 is outside"));
    assert_null(t);
}

/* --- in a GGUF ---- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} Buf;

static void buf_put(Buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n);
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void buf_str(Buf *b, const char *s, size_t len)
{
    uint64_t l = len;
    buf_put(b, &l, 8);
    buf_put(b, s, len);
}

static void buf_key(Buf *b, const char *key, uint32_t type)
{
    buf_str(b, key, strlen(key));
    buf_put(b, &type, 4);
}

static void buf_array(Buf *b, const char *key, uint32_t elem, uint64_t n)
{
    buf_key(b, key, GGUF_ARRAY);
    buf_put(b, &elem, 4);
    buf_put(b, &n, 8);
}

enum { DMG_NONE, DMG_SCORES_I32, DMG_TYPES_SHORT, DMG_TYPE_9, DMG_BOS_PAST, DMG_NO_TOKENS };

/* The GGUF at in with the hand vocabulary added (tokenizer model `model`,
 * damaged as asked) into out: the metadata goes after the header, padded
 * to the alignment (32) so every offset after it still holds. */
static void gguf_with_vocab(const char *in, const char *out, const char *model, int damage)
{
    HandVocab h;
    hand_vocab(&h, 0);
    if (damage == DMG_TYPE_9)
        h.type[7] = 9;
    Buf b = { 0 };
    uint64_t n_kv = 5; /* model, scores, types, BOS, pad */
    buf_key(&b, "tokenizer.ggml.model", GGUF_STRING);
    buf_str(&b, model, strlen(model));
    if (damage != DMG_NO_TOKENS) {
        buf_array(&b, "tokenizer.ggml.tokens", GGUF_STRING, HV_N);
        for (size_t i = 0; i < HV_N; i++)
            buf_str(&b, h.text[i], h.len[i]);
        n_kv++;
    }
    buf_array(&b, "tokenizer.ggml.scores", damage == DMG_SCORES_I32 ? GGUF_I32 : GGUF_F32, HV_N);
    buf_put(&b, h.score, sizeof h.score);
    uint64_t n_types = damage == DMG_TYPES_SHORT ? HV_N - 1 : HV_N;
    buf_array(&b, "tokenizer.ggml.token_type", GGUF_I32, n_types);
    buf_put(&b, h.type, n_types * sizeof(int));
    uint32_t bos = damage == DMG_BOS_PAST ? HV_N : 1;
    buf_key(&b, "tokenizer.ggml.bos_token_id", GGUF_U32);
    buf_put(&b, &bos, 4);
    size_t pad_base = b.n + 8 + 8 + 4 + 8; /* the pad key "test.pad", its type, its string's length */
    char pad[32];
    memset(pad, 'x', sizeof pad);
    buf_key(&b, "test.pad", GGUF_STRING);
    buf_str(&b, pad, (32 - pad_base % 32) % 32);
    assert_int_equal(b.n % 32, 0);
    size_t size;
    unsigned char *file = read_all(in, &size);
    uint64_t kv;
    memcpy(&kv, file + 16, 8);
    kv += n_kv;
    memcpy(file + 16, &kv, 8);
    FILE *f = fopen(out, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file, 1, 24, f), 24);
    assert_int_equal(fwrite(b.p, 1, b.n, f), b.n);
    assert_int_equal(fwrite(file + 24, 1, size - 24, f), size - 24);
    fclose(f);
    free(file);
    free(b.p);
}

/* A model of the hand vocabulary's size. */
static void hand_model(Model *m, size_t seq)
{
    Config c = test_config(2, 4, 2);
    c.vocab = HV_N;
    c.max_seq_len = seq;
    test_model(m, &c);
}

/* path's tokenizer as config_from_checkpoint finds it: read (it encodes the
 * hand cases), ids only (note says why), or refused (err says why). */
static void expect_vocab(const char *path, const char *note, const char *err)
{
    Config c;
    Err e = { 0 };
    int rc = config_from_checkpoint(&c, path, &e);
    if (err) {
        assert_int_equal(rc, -1);
        assert_null(strchr(e.msg, '\n'));
        size_t dir = (size_t)(strrchr(path, '/') - path); /* the file's path, or tokenizer.bin's beside it */
        if (!strstr(e.msg, err) || strncmp(e.msg, path, dir) != 0)
            fail_msg("error '%s' does not say '%s' after the path", e.msg, err);
        return;
    }
    if (rc < 0)
        fail_msg("%s", e.msg);
    if (note) {
        assert_string_equal(c.tokenizer, "");
        if (!strstr(c.tokenizer_note, note))
            fail_msg("note '%s' does not say '%s'", c.tokenizer_note, note);
        return;
    }
    assert_string_equal(c.tokenizer, CHECKPOINT_TOKENIZER);
    Tokenizer *t;
    if (checkpoint_tokenizer(&c, &t, &e) < 0)
        fail_msg("%s", e.msg);
    check_hand_encodes(t);
    tokenizer_free(t);
}

/* The checkpoint at src loaded and exported again with the tokenizer it
 * carries, into a new temporary GGUF at dst. */
static void export_again(const char *src, char *dst, size_t cap)
{
    Model m;
    Tokenizer *t;
    Err e = { 0 };
    load_from(src, &m);
    if (checkpoint_tokenizer(&m.cfg, &t, &e) < 0)
        fail_msg("%s", e.msg);
    temp_path(dst, cap, ".gguf");
    if (model_export_gguf(&m, t, dst, FMT_F32, NULL, NULL, NULL, &e) < 0)
        fail_msg("export: %s", e.msg);
    tokenizer_free(t);
    model_free(&m);
}

static void test_gguf_tokenizer(void **state)
{
    (void)state;
    Model m;
    hand_model(&m, 64);
    char base[512], path[512];
    export_to(&m, FMT_F32, base, sizeof base);
    model_free(&m);
    temp_path(path, sizeof path, ".gguf");
    expect_vocab(base, "names no tokenizer", NULL);
    gguf_with_vocab(base, path, "llama", DMG_NONE);
    expect_vocab(path, NULL, NULL);
    char again[512]; /* and exported, it carries the same vocabulary on */
    export_again(path, again, sizeof again);
    expect_vocab(again, NULL, NULL);
    unlink(again);
    gguf_with_vocab(base, path, "gpt2", DMG_NONE);
    expect_vocab(path, NULL, "'tokenizer.ggml.merges' is missing (tokenizer model 'gpt2')");
    gguf_with_vocab(base, path, "bert", DMG_NONE);
    expect_vocab(path, "tokenizer model 'bert' is not read", NULL);
    static const struct { int damage; const char *want; } bad[] = {
        { DMG_SCORES_I32, "'tokenizer.ggml.scores' is an array of 271 i32; the tokenizer needs 271 f32" },
        { DMG_TYPES_SHORT, "'tokenizer.ggml.token_type' is an array of 270 i32" },
        { DMG_TYPE_9, "token 7 has type 9" },
        { DMG_BOS_PAST, "'tokenizer.ggml.bos_token_id' is 271, outside the 271 tokens" },
        { DMG_NO_TOKENS, "'tokenizer.ggml.tokens' is missing" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gguf_with_vocab(base, path, "llama", bad[i].damage);
        expect_vocab(path, NULL, bad[i].want);
    }
    unlink(base);
    unlink(path);
}

/* llama2.c's tokenizer.bin of the hand vocabulary (spaces as spaces):
 * max_token_length max_len, then `extra` bytes added or (negative) cut. */
static void write_tokenizer_bin(const char *path, int32_t max_len, long extra)
{
    HandVocab h;
    hand_vocab(&h, 1);
    Buf b = { 0 };
    buf_put(&b, &max_len, 4);
    for (size_t i = 0; i < HV_N; i++) {
        int32_t len = (int32_t)h.len[i];
        buf_put(&b, &h.score[i], 4);
        buf_put(&b, &len, 4);
        buf_put(&b, h.text[i], h.len[i]);
    }
    if (extra > 0)
        buf_put(&b, "zzzz", (size_t)extra);
    write_all(path, b.p, extra < 0 ? b.n - (size_t)-extra : b.n);
    free(b.p);
}

static void test_llama2c_tokenizer_bin(void **state)
{
    (void)state;
    char dir[512], ckpt[600], bin[600];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kvscope-test-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
    assert_non_null(mkdtemp(dir));
    snprintf(ckpt, sizeof ckpt, "%s/model.bin", dir);
    snprintf(bin, sizeof bin, "%s/tokenizer.bin", dir);
    Model m;
    hand_model(&m, 64);
    write_llama2c(&m, ckpt, 0);
    model_free(&m);
    expect_vocab(ckpt, "no tokenizer.bin beside", NULL);
    write_tokenizer_bin(bin, 8, 0);
    expect_vocab(ckpt, NULL, NULL);
    char gguf[512]; /* exported, its spaces written as GGUF's U+2581 and the types inferred */
    export_again(ckpt, gguf, sizeof gguf);
    expect_vocab(gguf, NULL, NULL);
    unlink(gguf);
    write_tokenizer_bin(bin, 8, -1);
    expect_vocab(ckpt, NULL, "tokenizer.bin: token 270 is 2 bytes long: past the end of the file");
    write_tokenizer_bin(bin, 8, -5);
    expect_vocab(ckpt, NULL, "tokenizer.bin: truncated at token 270 of the 271");
    write_tokenizer_bin(bin, 8, 3);
    expect_vocab(ckpt, NULL, "tokenizer.bin: 3 bytes after the 271 tokens");
    write_tokenizer_bin(bin, 4, 0);
    expect_vocab(ckpt, NULL, "tokenizer.bin: token 0 is 5 bytes long: past max_token_length");
    write_tokenizer_bin(bin, -1, 0);
    expect_vocab(ckpt, NULL, "max_token_length -1 is not a length");
    unlink(bin);
    unlink(ckpt);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32_round_trip_is_exact),
        cmocka_unit_test(test_q8_0_bytes_are_the_engines),
        cmocka_unit_test(test_q4_0_bytes_are_the_engines),
        cmocka_unit_test(test_f16_bytes_are_the_engines),
        cmocka_unit_test(test_qdot_q8_0),
        cmocka_unit_test(test_qdot_q4_0),
        cmocka_unit_test(test_qdot_int4),
        cmocka_unit_test(test_qdot_fp4),
        cmocka_unit_test(test_qdot_extremes),
        cmocka_unit_test(test_qdot_long_group),
        cmocka_unit_test(test_stored_q8_0_matvec),
        cmocka_unit_test(test_stored_q4_0_matvec),
        cmocka_unit_test(test_stored_f16_matvec),
        cmocka_unit_test(test_llama2c_loads_and_generates_the_same),
        cmocka_unit_test(test_llama2c_shared_classifier),
        cmocka_unit_test(test_llama2c_malformed),
        cmocka_unit_test(test_rope_permutation_makes_halves_run_as_pairs),
        cmocka_unit_test(test_valid_file_opens),
        cmocka_unit_test(test_truncated_anywhere),
        cmocka_unit_test(test_magic_and_version),
        cmocka_unit_test(test_absurd_counts),
        cmocka_unit_test(test_tensor_offsets_and_types),
        cmocka_unit_test(test_duplicate_missing_and_unknown_tensors),
        cmocka_unit_test(test_dimensions_disagree_with_metadata),
        cmocka_unit_test(test_every_value_type),
        cmocka_unit_test(test_writer_metadata_and_alignment),
        cmocka_unit_test(test_fuzz_regressions),
        cmocka_unit_test(test_spm_hand_vocabulary),
        cmocka_unit_test(test_gguf_tokenizer),
        cmocka_unit_test(test_llama2c_tokenizer_bin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
