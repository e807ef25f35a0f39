/* test_kernels.c: every ISA table this CPU runs agrees with the reference
 * kernels on deterministic data of awkward sizes, within named tolerances. */
#include "testutil.h"

/* matmul: float sums of `in` products reordered by SIMD lanes; the error
 * grows with the length, so the tolerance does too (relative to max(1, |y|)). */
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
        cmocka_unit_test(test_exp_sum_and_swiglu),
        cmocka_unit_test(test_rmsnorm_and_rope),
        cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests_name("kernels", tests, NULL, NULL);
}
