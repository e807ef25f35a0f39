/* test_lesson_rules.c: the lint's rules against checks that could hardly
 * fail, and figures a tolerance hides (course/lesson_rules.h). Each rule is
 * met by a crafted bad check it must refuse and a good one it must let by. */
#include "testutil.h"

#include "course/lesson_rules.h"

static CheckSpec spec(const char *run, const char *value, const char *expect, const char *tol)
{
    return (CheckSpec){ .id = "t.check", .run = run, .value = value, .expect = expect, .tol = tol ? tol : "",
                        .hint = "h", .measured = "" };
}

static void test_static_rules(void **state)
{
    (void)state;
    char why[600];
    /* arithmetic on constants: lesson 15's old `8 * 1.4` */
    CheckSpec c = spec("kvscope run --model encdec --beams 8 --format json", "8 * 1.4", "11.2", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    assert_non_null(strstr(why, "reads nothing"));
    /* a configuration key echoed: model.head_dim */
    c = spec("kvscope calc --model llama-2-7b --format json", "model.head_dim", "128", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    assert_non_null(strstr(why, "reads back the input"));
    /* an option echoed, with arithmetic: lesson 3's old `context / 128` */
    c = spec("kvscope calc --model glm-mla --context 8192 --format json", "context / 128", "64", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    /* a --set key echoed */
    c = spec("kvscope calc --model tiny --set sliding_window=6 --format json", "sliding_window", "6", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    /* not an engine command */
    c = spec("kvscope lesson check 3", "rows[0].x", "1", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    c = spec("kvscope calc --list --format json", "count(models[*].name)", "12", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    /* good: engine output, also mixed with an echo and with functions and 1e6 */
    c = spec("kvscope calc --model llama-2-7b --format json", "formats[format=f16].bytes_per_token", "524,288", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 0);
    c = spec("kvscope calc --model small --format json",
             "formats[format=int4].bytes_per_token_layer / (2 * model.n_kv_heads)", "18", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 0);
    c = spec("kvscope run --model tiny --format tsv", "sum(rows[phase=decode].kv_bytes_read) / 1e6", "0.1", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 0);
}

static void test_value_is_input(void **state)
{
    (void)state;
    char why[600];
    /* the window the command sets, read back under its name */
    CheckSpec c = spec("kvscope run --model tiny --cache ring:window=8,sinks=2 --format json", "cache.window", "8",
                       NULL);
    assert_int_equal(rule_value_is_input(&c, 8, why, sizeof why), 1);
    assert_non_null(strstr(why, "window"));
    c = spec("kvscope run --model tiny --tokens 12 --format json", "summary.tokens", "12", NULL);
    assert_int_equal(rule_value_is_input(&c, 12, why, sizeof why), 1);
    /* good: a count the engine made that happens to equal an input */
    c = spec("kvscope run --model encdec --beams 8 --format json", "measured.cross_peak_refs", "8", NULL);
    assert_int_equal(rule_value_is_input(&c, 8, why, sizeof why), 0);
    /* good: numbers inside names (llama-3-8b) are no inputs */
    c = spec("kvscope calc --model llama-3-8b --format json", "shape.k_rows", "8", NULL);
    assert_int_equal(rule_value_is_input(&c, 8, why, sizeof why), 0);
    /* booleans are never echoes */
    c = spec("kvscope run --model tiny --tokens 1 --compare --format json", "compare.tokens", "yes", NULL);
    assert_int_equal(rule_value_is_input(&c, 1, why, sizeof why), 0);
}

static void test_rounds_as_written(void **state)
{
    (void)state;
    char why[600];
    /* lesson 10's old slip: 0.045 in the prose, 0.043 from the engine, a 10% tol */
    CheckSpec c = spec("kvscope run --format json", "compare.max_logit_diff_rel", "0.045", "10%");
    assert_int_equal(rule_rounds_as_written(&c, 0.04258, why, sizeof why), 1);
    assert_non_null(strstr(why, "0.043"));
    /* lesson 9's: 0.00024 against 0.000246 */
    c = spec("kvscope run --format json", "compare.max_logit_diff_rel", "0.00024", "5%");
    assert_int_equal(rule_rounds_as_written(&c, 0.000246, why, sizeof why), 1);
    /* good: rounds to the figure */
    c = spec("kvscope run --format json", "compare.max_logit_diff_rel", "0.093", "5%");
    assert_int_equal(rule_rounds_as_written(&c, 0.09324, why, sizeof why), 0);
    /* good: an integer figure the value rounds to */
    c = spec("kvscope bench --format tsv", "rows[0].x / rows[1].y", "14", "0.5");
    assert_int_equal(rule_rounds_as_written(&c, 14.22, why, sizeof why), 0);
    /* a measured figure is the learner's machine's: not held to it */
    c = spec("kvscope bench --format tsv", "rows[0].pct_bandwidth", "100", "75%");
    c.measured = "yes";
    assert_int_equal(rule_rounds_as_written(&c, 60, why, sizeof why), 0);
    /* without a tol the check itself holds the figure: nothing to add */
    c = spec("kvscope run --format json", "x.y", "0.045", NULL);
    assert_int_equal(rule_rounds_as_written(&c, 0.04258, why, sizeof why), 0);
}

static void test_reads_back(void **state)
{
    (void)state;
    char why[600];
    /* calc's shape and cached_positions restate the configuration */
    CheckSpec c = spec("kvscope calc --model llama-2-7b --format json", "shape.k_len", "128", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    c = spec("kvscope calc --model mistral-7b --context 32768 --format json", "cached_positions", "4,096", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    c = spec("kvscope calc --model glm-mla --format json", "reference_shape.k_len", "256", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 1);
    /* good: the engine's bytes over the formula's other factors */
    c = spec("kvscope calc --model llama-2-7b --format json",
             "formats[format=f16].bytes_per_token_layer / (2 * 32 * 2)", "128", NULL);
    assert_int_equal(rule_check_static(&c, why, sizeof why), 0);

    const RuleConfigValue cfg[] = { { "d_model", 64 }, { "max_seq_len", 256 }, { "n_layers", 2 } };
    /* a ratio that cancels to max_seq_len: lesson 5's old max-positions */
    c = spec("kvscope run --model tiny --prompt-len 8 --tokens 8 --format tsv",
             "rows[-1].cache_bytes_reserved * rows[-1].cache_len / rows[-1].cache_bytes_used", "256", NULL);
    assert_int_equal(rule_reads_back(&c, 256, cfg, 3, why, sizeof why), 1);
    assert_non_null(strstr(why, "max_seq_len"));
    /* a bare read of positions over a page size, both on the command line */
    c = spec("kvscope run --model tiny --set max_seq_len=1024 --prompt-len 1024 --tokens 1 --cache paged:page=64 "
             "--format json", "pages.used", "16", NULL);
    assert_int_equal(rule_reads_back(&c, 16, cfg, 3, why, sizeof why), 1);
    assert_non_null(strstr(why, "1024 / 64"));
    /* a bare read equal to a configuration number */
    c = spec("kvscope run --model tiny --format json", "summary.rows", "256", NULL);
    assert_int_equal(rule_reads_back(&c, 256, cfg, 3, why, sizeof why), 1);
    /* good: the bytes over the page's size, a computation of the check's own */
    c = spec("kvscope run --model tiny --set max_seq_len=1024 --prompt-len 1024 --tokens 1 --cache paged:page=64 "
             "--format json", "steps[-1].counters.cache_bytes_used / (64 * 512)", "16", NULL);
    assert_int_equal(rule_reads_back(&c, 16, cfg, 3, why, sizeof why), 0);
    /* good: a count of the engine's that is no configuration number (8 beams, 8 references) */
    c = spec("kvscope run --model encdec --beams 8 --format json", "measured.cross_peak_refs", "8", NULL);
    assert_int_equal(rule_reads_back(&c, 8, cfg, 3, why, sizeof why), 0);

    /* a value that halves another check's */
    CheckSpec a = spec("kvscope run --model worked-example --format tsv", "rows[step=0].proj_flops", "384", NULL);
    CheckSpec b = spec("kvscope run --model worked-example --format tsv", "rows[step=0].proj_flops / 2", "192", NULL);
    b.id = "t.half";
    assert_int_equal(rule_halves_another(&b, &a, why, sizeof why), 1);
    assert_non_null(strstr(why, "halved"));
    assert_int_equal(rule_halves_another(&a, &b, why, sizeof why), 0);
    /* good: against the formula's own count */
    b.value = "rows[step=0].proj_flops / 192";
    assert_int_equal(rule_halves_another(&b, &a, why, sizeof why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_rules),
        cmocka_unit_test(test_value_is_input),
        cmocka_unit_test(test_rounds_as_written),
        cmocka_unit_test(test_reads_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
