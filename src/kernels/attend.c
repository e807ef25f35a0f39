/* attend.c: the attention forms by name, and the one entry point that runs
 * the chosen form (naive and materialize in attend_naive.c, flash in
 * attend_flash.c). */
#include <string.h>

#include "kernels/attend_rows.h"

static const char *const algo_names[] = {
    [ATTEND_NAIVE] = "naive",
    [ATTEND_MATERIALIZE] = "materialize",
    [ATTEND_FLASH] = "flash",
};

const char *attend_algo_name(AttendAlgo algo)
{
    return (unsigned)algo < sizeof algo_names / sizeof algo_names[0] ? algo_names[algo] : "?";
}

int attend_algo_parse(const char *name, AttendAlgo *out)
{
    for (size_t i = 0; i < sizeof algo_names / sizeof algo_names[0]; i++)
        if (strcmp(name, algo_names[i]) == 0) {
            *out = (AttendAlgo)i;
            return 0;
        }
    return -1;
}

void attend(const Kernels *k, AttendAlgo algo, const AttnArgs *a, Counters *ctr)
{
    switch (algo) {
    case ATTEND_NAIVE:
        attend_naive(k, a, 0, ctr);
        break;
    case ATTEND_MATERIALIZE:
        attend_naive(k, a, 1, ctr);
        break;
    case ATTEND_FLASH:
        attend_flash(k, a, ctr);
        break;
    }
}
