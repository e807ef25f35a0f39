/* test_kernels.c: every ISA table this CPU runs agrees with the reference
 * kernels on deterministic data of awkward sizes, within named tolerances. */
#include "testutil.h"

/* matmul: every table sums in one order, so the bits agree
 * (test_matmul_isa); this bound, growing with the length (relative to
 * max(1, |y|)), stays as the check that the sums are right at all. */
#define MATMUL_TOL_PER_IN 1e-6
/* exp: a degree-6 polynomial against libm's expf (~2 ulp apart) */
#define EXP_REL_TOL 2e-6
#define SWIGLU_REL_TOL 2e-6
/* RMSNorm: the sum of squares reordered by lanes; RoPE: the same angles,
 * a fused multiply-add instead of two roundings */
#define RMSNORM_REL_TOL 2e-6
#define ROPE_REL_TOL 1e-6

static const size_t sizes[] = { 1, 7, 8, 31, 33, 127, 129, 4096 };

static void fill(float *x, size_t n, unsigned salt, float lo, float hi)
{
    uint32_t s = 2463534242u ^ salt;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5; /* xorshift32: same data everywhere */
        x[i] = lo + (hi - lo) * (float)(s >> 8) / (float)(1u << 24);
    }
}

/* Each ISA but the reference, with a line saying which ran. */
static size_t simd_tables(const Kernels **out)
{
    const Kernels *all[4];
    size_t n = kernels_available(all, 4), m = 0;
    for (size_t i = 1; i < n; i++)
        out[m++] = all[i];
    printf("  ISA paths run:");
    for (size_t i = 0; i < m; i++)
        printf(" %s", out[i]->isa);
    printf("%s; skipped (not on this CPU):", m ? "" : " none");
    const char *known[] = { "avx2", "avx512", "neon" };
    for (size_t k = 0; k < 3; k++) {
        int ran = 0;
        for (size_t i = 0; i < m; i++)
            ran |= strcmp(out[i]->isa, known[k]) == 0;
        if (!ran)
            printf(" %s", known[k]);
    }
    printf("\n");
    return m;
}

static void test_matmul(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = simd_tables(isa);
    static const size_t outs[] = { 1, 3, 4, 5, 13 }, rows[] = { 1, 3 };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t oi = 0; oi < 5; oi++)
            for (size_t ri = 0; ri < 2; ri++) {
                size_t in = sizes[si], out = outs[oi], n = rows[ri];
                float *x = malloc(n * in * sizeof(float)), *w = malloc(out * in * sizeof(float));
                float *want = malloc(n * out * sizeof(float)), *got = malloc(n * out * sizeof(float));
                fill(x, n * in, (unsigned)in, -1, 1);
                fill(w, out * in, (unsigned)(in * 3 + out), -1, 1);
                uint64_t f_ref = 0;
                Counters c_ref = { 0 };
                matmul_ref(want, x, w, n, in, out, &f_ref, &c_ref);
                for (size_t k = 0; k < n_isa; k++) {
                    uint64_t f = 0;
                    Counters c = { 0 };
                    isa[k]->matmul(got, x, w, n, in, out, &f, &c);
                    double tol = MATMUL_TOL_PER_IN * (double)in;
                    if (max_rel_diff(got, want, n * out, tol, isa[k]->isa) > tol)
                        fail_msg("matmul %s n=%zu in=%zu out=%zu beyond %.1e", isa[k]->isa, n, in, out, tol);
                    assert_int_equal(f, f_ref);
                    assert_int_equal(c.weight_bytes_read, c_ref.weight_bytes_read);
                }
                free(x), free(w), free(want), free(got);
            }
}

/* The training's products on strided blocks (rows 3 floats apart beyond
 * their width, the padding checked untouched), odd sizes that are not
 * multiples of any tile, against the reference; and each ISA's y computed
 * in two pieces, split by rows and by columns, is the same bytes as whole. */
enum { GEMM_NT, GEMM_NN, GEMM_TN };
static void gemm_run(const Kernels *k, int kind, float *y, size_t ldy, const float *a, size_t lda, const float *b,
                     size_t ldb, size_t n, size_t kk, size_t m)
{
    GemmFn fn = kind == GEMM_NT ? k->gemm_nt : kind == GEMM_NN ? k->gemm_nn : k->gemm_tn;
    fn(y, ldy, a, lda, b, ldb, n, kk, m);
}

/* y's block at rows r0.., columns c0..: the operands' matching offsets. */
static void gemm_piece(const Kernels *k, int kind, float *y, size_t ldy, const float *a, size_t lda, const float *b,
                       size_t ldb, size_t r0, size_t r1, size_t c0, size_t c1, size_t kk)
{
    const float *ap = kind == GEMM_TN ? a + r0 : a + r0 * lda;
    const float *bp = kind == GEMM_NT ? b + c0 * ldb : b + c0;
    gemm_run(k, kind, y + r0 * ldy + c0, ldy, ap, lda, bp, ldb, r1 - r0, kk, c1 - c0);
}

static void test_gemm(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = simd_tables(isa);
    static const size_t ns[] = { 1, 5, 9 }, ks[] = { 1, 7, 17, 33, 130 }, ms[] = { 1, 3, 7, 17, 63, 65, 130 };
    const char *names[] = { "gemm_nt", "gemm_nn", "gemm_tn" };
    for (int kind = 0; kind < 3; kind++)
        for (size_t ni = 0; ni < 3; ni++)
            for (size_t ki = 0; ki < 5; ki++)
                for (size_t mi = 0; mi < 7; mi++) {
                    const size_t n = ns[ni], kk = ks[ki], m = ms[mi], pad = 3;
                    /* a: [n][k] (nt, nn) or [k][n] (tn); b: [m][k] (nt) or [k][m] */
                    const size_t a_rows = kind == GEMM_TN ? kk : n, a_cols = kind == GEMM_TN ? n : kk;
                    const size_t b_rows = kind == GEMM_NT ? m : kk, b_cols = kind == GEMM_NT ? kk : m;
                    const size_t lda = a_cols + pad, ldb = b_cols + pad, ldy = m + pad;
                    float *a = malloc(a_rows * lda * sizeof(float)), *b = malloc(b_rows * ldb * sizeof(float));
                    float *y0 = malloc(n * ldy * sizeof(float)), *want = malloc(n * ldy * sizeof(float));
                    float *got = malloc(n * ldy * sizeof(float)), *split = malloc(n * ldy * sizeof(float));
                    fill(a, a_rows * lda, (unsigned)(n * 7 + kk), -1, 1);
                    fill(b, b_rows * ldb, (unsigned)(m * 5 + kk), -1, 1);
                    fill(y0, n * ldy, (unsigned)(n + m), -1, 1);
                    memcpy(want, y0, n * ldy * sizeof(float));
                    gemm_run(&(Kernels){ .gemm_nt = gemm_nt_ref, .gemm_nn = gemm_nn_ref, .gemm_tn = gemm_tn_ref },
                             kind, want, ldy, a, lda, b, ldb, n, kk, m);
                    for (size_t i = 0; i < n; i++) /* the padding is y0's in the reference too */
                        for (size_t j = m; j < ldy; j++)
                            assert_true(want[i * ldy + j] == y0[i * ldy + j]);
                    for (size_t q = 0; q < n_isa; q++) {
                        memcpy(got, y0, n * ldy * sizeof(float));
                        gemm_run(isa[q], kind, got, ldy, a, lda, b, ldb, n, kk, m);
                        const double tol = MATMUL_TOL_PER_IN * (double)kk;
                        if (max_rel_diff(got, want, n * ldy, tol, names[kind]) > tol)
                            fail_msg("%s %s n=%zu k=%zu m=%zu beyond %.1e", names[kind], isa[q]->isa, n, kk, m, tol);
                        for (int by_cols = 0; by_cols < 2; by_cols++) {
                            const size_t cut = by_cols ? m / 2 + 1 : n / 2 + 1;
                            memcpy(split, y0, n * ldy * sizeof(float));
                            if (by_cols) {
                                gemm_piece(isa[q], kind, split, ldy, a, lda, b, ldb, 0, n, 0, cut < m ? cut : m, kk);
                                if (cut < m)
                                    gemm_piece(isa[q], kind, split, ldy, a, lda, b, ldb, 0, n, cut, m, kk);
                            } else {
                                gemm_piece(isa[q], kind, split, ldy, a, lda, b, ldb, 0, cut < n ? cut : n, 0, m, kk);
                                if (cut < n)
                                    gemm_piece(isa[q], kind, split, ldy, a, lda, b, ldb, cut, n, 0, m, kk);
                            }
                            if (memcmp(split, got, n * ldy * sizeof(float)) != 0)
                                fail_msg("%s %s n=%zu k=%zu m=%zu: split by %s, not the same bytes", names[kind],
                                         isa[q]->isa, n, kk, m, by_cols ? "columns" : "rows");
                        }
                    }
                    free(a), free(b), free(y0), free(want), free(got), free(split);
                }
}

static void test_exp_sum_and_swiglu(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = simd_tables(isa);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        float *src = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
        float *up = malloc(n * sizeof(float));
        fill(src, n, (unsigned)n, -40, 0);
        fill(up, n, (unsigned)n + 1, -2, 2);
        memcpy(want, src, n * sizeof(float));
        float sum_ref = exp_sum_ref(want, n, 0.5f);
        for (size_t k = 0; k < n_isa; k++) {
            memcpy(got, src, n * sizeof(float));
            float sum = isa[k]->exp_sum(got, n, 0.5f);
            if (max_rel_diff(got, want, n, EXP_REL_TOL, "exp") > EXP_REL_TOL)
                fail_msg("exp_sum %s n=%zu", isa[k]->isa, n);
            assert_true(fabs(sum - sum_ref) <= EXP_REL_TOL * fabs(sum_ref) * 4);
        }
        fill(src, n, (unsigned)n + 2, -12, 12);
        swiglu_ref(want, src, up, n, NULL);
        for (size_t k = 0; k < n_isa; k++) {
            isa[k]->swiglu(got, src, up, n, NULL);
            if (max_rel_diff(got, want, n, SWIGLU_REL_TOL, "swiglu") > SWIGLU_REL_TOL)
                fail_msg("swiglu %s n=%zu", isa[k]->isa, n);
        }
        free(src), free(want), free(got), free(up);
    }
}

static void test_rmsnorm_and_rope(void **state)
{
    (void)state;
    const Kernels *isa[4];
    size_t n_isa = simd_tables(isa);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const size_t d = sizes[si], rows = 3;
        float *x = malloc(rows * d * sizeof(float)), *w = malloc(d * sizeof(float));
        float *want = malloc(rows * d * sizeof(float)), *got = malloc(rows * d * sizeof(float));
        fill(x, rows * d, (unsigned)d + 3, -3, 3);
        fill(w, d, (unsigned)d + 4, 0.5f, 1.5f);
        rmsnorm_ref(want, x, w, rows, d, 1e-5f, NULL);
        for (size_t k = 0; k < n_isa; k++) {
            isa[k]->rmsnorm(got, x, w, rows, d, 1e-5f, NULL);
            if (max_rel_diff(got, want, rows * d, RMSNORM_REL_TOL, "rmsnorm") > RMSNORM_REL_TOL)
                fail_msg("rmsnorm %s d=%zu", isa[k]->isa, d);
        }
        free(x), free(w), free(want), free(got);
    }
    /* RoPE on even head sizes, short and long, including one past the SIMD limit */
    static const size_t dims[] = { 2, 6, 8, 30, 64, 128, 2048 }, positions[] = { 0, 1, 7, 5000 };
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t pi = 0; pi < 4; pi++) {
            const size_t hd = dims[di], heads = 3, n = heads * hd;
            float *src = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
            fill(src, n, (unsigned)(hd + pi), -2, 2);
            memcpy(want, src, n * sizeof(float));
            rope_ref(want, heads, hd, positions[pi], 10000.0, NULL);
            for (size_t k = 0; k < n_isa; k++) {
                memcpy(got, src, n * sizeof(float));
                Counters ctr = { 0 };
                isa[k]->rope(got, heads, hd, positions[pi], 10000.0, &ctr);
                if (max_rel_diff(got, want, n, ROPE_REL_TOL, "rope") > ROPE_REL_TOL)
                    fail_msg("rope %s head_dim=%zu pos=%zu", isa[k]->isa, hd, positions[pi]);
                assert_int_equal(ctr.flops_other, 3 * n);
            }
            free(src), free(want), free(got);
        }
}

static void test_select(void **state)
{
    (void)state;
    Err e = { 0 };
    const Kernels *all[4];
    size_t n = kernels_available(all, 4);
    assert_true(n >= 1);
    assert_string_equal(all[0]->isa, "ref");
    assert_ptr_equal(kernels_select(NULL, &e), all[n - 1]); /* auto: the best */
    assert_ptr_equal(kernels_select("ref", &e), all[0]);
    assert_null(kernels_select("sse9", &e));
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "unknown ISA 'sse9'"));
    setenv("KVSCOPE_ISA", "ref", 1);
    assert_ptr_equal(kernels_select("auto", &e), all[0]);
    unsetenv("KVSCOPE_ISA");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_exp_sum_and_swiglu),
        cmocka_unit_test(test_rmsnorm_and_rope),
        cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests_name("kernels", tests, NULL, NULL);
}
