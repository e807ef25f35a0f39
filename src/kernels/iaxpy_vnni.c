/* iaxpy_vnni.c: iaxpy_avx2.c built again with AVX-512 (VL, VNNI) enabled
 * (kernels.h, IAxpyFn): the pairs multiplied and added by vpdpwssd, a
 * block's row pairs in 512-bit registers (iaxpy_pass512.h); the same
 * integer sums. That file says how, and what it measured. */
#define IAXPY_FN iaxpy_vnni
#include "kernels/iaxpy_avx2.c"
