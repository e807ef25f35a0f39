/* fuzz_config.c: libFuzzer target for the model .ini loader (model/config.h).
 *
 * config_load reads only files, so each input is written to a temporary
 * NAME.ini and loaded; a model that loads is then validated, and one that
 * passes has its widths computed, as the allocator would. */
#include "fuzz_util.h"
#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".ini");
    if (!path)
        return 0;
    Config c;
    Err e;
    if (config_load(&c, path, &e) < 0) {
        fuzz_check_err(&e, NULL);
        return 0;
    }
    if (!memchr(c.name, '\0', sizeof c.name) || !memchr(c.weights, '\0', sizeof c.weights) ||
        !memchr(c.tokenizer, '\0', sizeof c.tokenizer))
        abort();
    if (config_validate(&c, &e) < 0)
        fuzz_check_err(&e, NULL);
    else if (config_q_dim(&c) == 0 || config_kv_dim(&c) == 0)
        abort();
    return 0;
}
