/* dispatch.c: one kernel table per instruction set, and the choice among
 * them from what this CPU reports. rmsnorm and RoPE keep their reference
 * versions everywhere: they are a rounding error of a step's time. */
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "kernels/codec_isa.h"
#include "kernels/kernels_isa.h"

static const Kernels table_ref = {
    .isa = "ref", .matmul = matmul_ref, .qdot = qdot_ref, .rmsnorm = rmsnorm_ref, .rope = rope_ref,
    .iaxpy = iaxpy_ref,
    .swiglu = swiglu_ref, .exp_sum = exp_sum_ref,
    .gemm_nt = gemm_nt_ref, .gemm_nn = gemm_nn_ref, .gemm_tn = gemm_tn_ref, .codec = codec_ref,
    .round_q8_0 = codec_quantize_q8_0_even,
};

#if defined(__x86_64__)
static const Kernels table_avx2 = {
    .isa = "avx2", .matmul = matmul_avx2, .qdot = qdot_avx2, .rmsnorm = rmsnorm_avx2, .rope = rope_avx2,
    .iaxpy = iaxpy_avx2,
    .swiglu = swiglu_avx2, .exp_sum = exp_sum_avx2,
    .gemm_nt = gemm_nt_avx2, .gemm_nn = gemm_nn_avx2, .gemm_tn = gemm_tn_avx2, .codec = codec_avx2,
    .round_q8_0 = codec_quantize_q8_0_even_avx2,
};
/* qdot stays AVX2's: AVX-512BW's forms gained little, nor did VNNI's
 * vpdpbusd in its pair sums (flash steps, cold, 65536 rows, AVX-512
 * Xeon: 0.99 to 1.02 of the time). */
static const Kernels table_avx512 = {
    .isa = "avx512", .matmul = matmul_avx512, .qdot = qdot_avx2, .rmsnorm = rmsnorm_avx512, .rope = rope_avx512,
    .iaxpy = iaxpy_avx2,
    .swiglu = swiglu_avx512, .exp_sum = exp_sum_avx512,
    .gemm_nt = gemm_nt_avx512, .gemm_nn = gemm_nn_avx512, .gemm_tn = gemm_tn_avx512,
    .codec = codec_avx512, .values_prefetch_own = 1, .round_q8_0 = codec_quantize_q8_0_even_avx2,
};
/* The same where the CPU has VNNI, but for iaxpy (iaxpy_vnni.c) and a
 * group's key dots (qdot_vnni.c). */
static const Kernels table_avx512_vnni = {
    .isa = "avx512", .note = "VNNI for the integer value weights and a group's key dots",
    .matmul = matmul_avx512, .qdot = qdot_vnni, .rmsnorm = rmsnorm_avx512, .rope = rope_avx512,
    .iaxpy = iaxpy_vnni,
    .swiglu = swiglu_avx512, .exp_sum = exp_sum_avx512,
    .gemm_nt = gemm_nt_avx512, .gemm_nn = gemm_nn_avx512, .gemm_tn = gemm_tn_avx512,
    .codec = codec_avx512, .values_prefetch_own = 1, .round_q8_0 = codec_quantize_q8_0_even_avx2,
};
#elif defined(__aarch64__)
static const Kernels table_neon = {
    .isa = "neon", .matmul = matmul_neon, .qdot = qdot_ref, .rmsnorm = rmsnorm_neon, .rope = rope_neon,
    .iaxpy = NULL, /* none: flash keeps f32 weights (the reference's would be slow, NEON's unmeasured) */
    .swiglu = swiglu_neon, .exp_sum = exp_sum_neon,
    /* the training's products: the reference's (NEON's unwritten; training runs on x86 here) */
    .gemm_nt = gemm_nt_ref, .gemm_nn = gemm_nn_ref, .gemm_tn = gemm_tn_ref, .codec = codec_neon,
    .round_q8_0 = codec_quantize_q8_0_even,
};
#endif

size_t kernels_available(const Kernels **out, size_t cap)
{
    size_t n = 0;
    if (n < cap)
        out[n++] = &table_ref;
#if defined(__x86_64__)
    __builtin_cpu_init();
    unsigned a, b, c, d; /* F16C from CPUID leaf 1, ECX: not every compiler knows its feature name */
    int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (avx2 && n < cap)
        out[n++] = &table_avx2;
    if (avx512 && n < cap)
        out[n++] = __builtin_cpu_supports("avx512vnni") ? &table_avx512_vnni : &table_avx512;
#elif defined(__aarch64__)
    if (n < cap)
        out[n++] = &table_neon; /* every AArch64 CPU has NEON */
#endif
    return n;
}

const Kernels *kernels_select(const char *isa, Err *e)
{
    const Kernels *have[4];
    size_t n = kernels_available(have, 4);
    if (!isa || strcmp(isa, "auto") == 0) {
        const char *env = getenv("KVSCOPE_ISA");
        if (!env || !*env || strcmp(env, "auto") == 0)
            return have[n - 1];
        isa = env;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(have[i]->isa, isa) == 0)
            return have[i];
    char names[64] = "";
    for (size_t i = 0; i < n; i++) {
        strcat(names, i ? ", " : "");
        strcat(names, have[i]->isa);
    }
    int known = strcmp(isa, "ref") == 0 || strcmp(isa, "avx2") == 0 || strcmp(isa, "avx512") == 0 ||
                strcmp(isa, "neon") == 0;
    err_set(e, ERR_USAGE, "%s ISA '%s' (this CPU runs: %s, auto)", known ? "this CPU cannot run the" : "unknown",
            isa, names);
    return NULL;
}
