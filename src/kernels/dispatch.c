#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

static const Kernels kernels_reference = {
    .isa = "ref",
    .matmul = matmul_ref,
    .rmsnorm = rmsnorm_ref,
    .rope = rope_ref,
    .attend = attend_ref,
    .swiglu = swiglu_ref,
};

const Kernels *kernels_select(const char *isa, Err *e)
{
    if (!isa || strcmp(isa, "auto") == 0) {
        const char *env = getenv("KVSCOPE_ISA");
        isa = (env && *env) ? env : "ref";
    }
    if (strcmp(isa, "ref") == 0)
        return &kernels_reference;
    err_set(e, ERR_USAGE, "unknown or unavailable ISA '%s' (available: ref)", isa);
    return NULL;
}
