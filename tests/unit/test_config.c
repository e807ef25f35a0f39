/* test_config.c: model configs: every shipped .ini loads and validates;
 * bad files and bad values fail with a message that names the problem. */
#include "testutil.h"

#include <dirent.h>
#include <unistd.h>

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    use_repo_data();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kvscope-cfg-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd);
}

/* Write an .ini holding `body` and try to load + validate it. */
static int try_ini(const char *body, Err *e)
{
    char path[128];
    snprintf(path, sizeof path, "%s/m.ini", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    Config c;
    if (config_load(&c, path, e) < 0)
        return -1;
    return config_validate(&c, e);
}

#define GOOD "d_model = 16\nn_layers = 1\nn_heads = 4\nn_kv_heads = 2\nhead_dim = 4\nffn_dim = 32\n" \
             "vocab = 32\nmax_seq_len = 64\n"

static void test_shipped_models_validate(void **state)
{
    (void)state;
    DIR *d = opendir("data/models");
    assert_non_null(d);
    struct dirent *ent;
    size_t n = 0;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 5 || strcmp(ent->d_name + len - 4, ".ini") != 0)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len - 4), ent->d_name);
        Config c;
        Err e = { 0 };
        if (config_load(&c, name, &e) < 0 || config_validate(&c, &e) < 0)
            fail_msg("model %s: %s", name, e.msg);
        assert_string_equal(c.name, name);
        n++;
    }
    closedir(d);
    assert_true(n >= 3); /* worked-example, tiny, small at least */
}

static void test_good_file_and_defaults(void **state)
{
    (void)state;
    Err e = { 0 };
    assert_int_equal(try_ini("; a comment\n[model]\n" GOOD, &e), 0);
    Config c;
    char path[128];
    snprintf(path, sizeof path, "%s/m.ini", tmpdir);
    assert_int_equal(config_load(&c, path, &e), 0);
    assert_int_equal(c.n_kv_heads, 2);
    assert_true(c.rope_theta == 10000.0); /* default when the file leaves it out */
    assert_string_equal(c.weights, "synthetic");
}

static void test_bad_files(void **state)
{
    (void)state;
    const struct { const char *body, *want; } bad[] = {
        { GOOD "this line is broken\n", "line 9: malformed line" },
        { GOOD "colour = blue\n", "unknown key 'colour'" },
        { GOOD "n_layers = 0\n", "n_layers: must be at least 1" },
        { GOOD "n_layers = -2\n", "must be at least 1, got '-2'" },
        { GOOD "d_model = twelve\n", "'twelve' is not a whole number" },
        { GOOD "n_kv_heads = 3\n", "n_heads (4) is not a multiple of n_kv_heads (3)" },
        { GOOD "head_dim = 5\n", "head_dim (5) must be even" },
        { GOOD "norm_eps = 0\n", "norm_eps must be in (0, 1]" },
        { GOOD "rope_theta = abc\n", "'abc' is not a finite number" },
        { "d_model = 16\n", "n_layers must be set" },
        { GOOD "vocab = 99999999999\n", "beyond kvscope's limit" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Err e = { 0 };
        if (try_ini(bad[i].body, &e) == 0 || e.kind != ERR_USAGE || !strstr(e.msg, bad[i].want))
            fail_msg("case %zu: got '%s', want a usage error containing '%s'", i, e.msg, bad[i].want);
    }
}

static void test_unknown_model_lists_the_known(void **state)
{
    (void)state;
    Config c;
    Err e = { 0 };
    assert_int_equal(config_load(&c, "no-such-model", &e), -1);
    assert_int_equal(e.kind, ERR_USAGE);
    assert_non_null(strstr(e.msg, "unknown model 'no-such-model'"));
    assert_non_null(strstr(e.msg, "tiny"));
}

static void test_set_overrides(void **state)
{
    (void)state;
    Config c;
    Err e = { 0 };
    assert_int_equal(config_load(&c, "tiny", &e), 0);
    assert_int_equal(config_set(&c, "n_layers", "3", &e), 0);
    assert_int_equal(c.n_layers, 3);
    assert_int_equal(config_set(&c, "shared_layers", "maybe", &e), -1);
    assert_int_equal(config_set(&c, "nope", "1", &e), -1);
    assert_non_null(strstr(e.msg, "unknown key 'nope'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_models_validate),
        cmocka_unit_test(test_good_file_and_defaults),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_unknown_model_lists_the_known),
        cmocka_unit_test(test_set_overrides),
    };
    return cmocka_run_group_tests_name("config", tests, setup, teardown);
}
