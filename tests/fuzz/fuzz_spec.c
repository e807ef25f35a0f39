/* fuzz_spec.c: libFuzzer target for cache spec strings (kv/spec.h).
 *
 * Each input is parsed as a spec; when it parses, every option of every
 * part is taken as a size, a real and a row format, as the caches do, and
 * each part is asked for options nobody took. */
#include "fuzz_util.h"
#include "kv/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    if (!s)
        return 0;
    KvSpec spec;
    Err e;
    if (spec_parse(s, &spec, &e) < 0) {
        fuzz_check_err(&e, s);
    } else {
        if (spec.n_parts < 1 || spec.n_parts > SPEC_MAX_PARTS)
            abort();
        (void)spec_modifier(&spec, "quant");
        for (size_t i = 0; i < spec.n_parts; i++) {
            KvSpecPart *p = &spec.part[i];
            if (p->n_opts > SPEC_MAX_OPTS || !memchr(p->name, '\0', sizeof p->name))
                abort();
            if (spec_check_all_taken(p, "nothing", &e) < 0)
                fuzz_check_err(&e, s);
            for (size_t k = 0; k < p->n_opts; k++) {
                char key[sizeof p->opt[k].key];
                memcpy(key, p->opt[k].key, sizeof key);
                size_t z = 7;
                double d = 0.5;
                Format f;
                if (spec_take_size(p, key, &z, &e) < 0)
                    fuzz_check_err(&e, s);
                if (spec_take_double(p, key, 0.0, 1.0, &d, &e) < 0)
                    fuzz_check_err(&e, s);
                else if (!(d >= 0.0 && d <= 1.0))
                    abort();
                if (spec_take_format(p, key, &f, &e) < 0)
                    fuzz_check_err(&e, s);
            }
            if (spec_check_all_taken(p, "everything", &e) < 0)
                abort(); /* every option was just taken */
        }
    }
    free(s);
    return 0;
}
