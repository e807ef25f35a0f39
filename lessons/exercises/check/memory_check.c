/* memory_check.c: checks lessons/exercises/memory_formula.c (lesson 3).
 *
 * For every model in data/models and every cache format, the learner's
 * token_layer_bytes and cache_bytes must equal kvscope's own figures
 * (memory_bytes of src/model/memory.h) at a few contexts and batches. */
#include <string.h>

#include "harness.h"
#include "memory_formula.h"
#include "model/memory.h"

int main(void)
{
    char list[2048];
    config_list(list, sizeof list);
    if (!list[0]) {
        printf("no models found (is KVSCOPE_DATA set to the data directory?)\n");
        return 2;
    }
    static const size_t contexts[] = { 1, 4096, 8192 }, batches[] = { 1, 32 };
    Tally t = { 0, 0 };
    size_t n_models = 0;
    for (char *name = strtok(list, ", "); name; name = strtok(NULL, ", ")) {
        Config c;
        Err e = { 0 };
        if (config_load(&c, name, &e) < 0 || config_validate(&c, &e) < 0) {
            printf("cannot load model %s: %s\n", name, e.msg);
            return 2;
        }
        n_models++;
        KvShape shape = memory_shape(&c);
        for (int f = 0; f < FMT_ROW_COUNT; f++) {
            for (size_t ci = 0; ci < 3; ci++)
                for (size_t bi = 0; bi < 2; bi++) {
                    KvBytes want;
                    if (memory_bytes(&c, &shape, (Format)f, contexts[ci], batches[bi], &want, &e) < 0)
                        continue;
                    size_t got_tl = token_layer_bytes(&c, (Format)f);
                    if (ci == 0 && bi == 0 && tally(&t, got_tl == want.token_layer))
                        printf("%s, %s: bytes per token per layer: expected %zu, got %zu\n", name,
                               format_name((Format)f), want.token_layer, got_tl);
                    size_t got = cache_bytes(&c, (Format)f, contexts[ci], batches[bi]);
                    if (tally(&t, got == want.total))
                        printf("%s, %s, context %zu, batch %zu: cache bytes: expected %zu, got %zu\n", name,
                               format_name((Format)f), contexts[ci], batches[bi], want.total, got);
                }
        }
    }
    printf("compared %zu models x %d formats\n", n_models, (int)FMT_ROW_COUNT);
    return verdict(&t, "figures");
}
