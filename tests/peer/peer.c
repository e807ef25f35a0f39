/* peer.c: llama.cpp's side of `make peer` (tests/peer/peer.sh). Built
 * against llama.cpp's prebuilt CPU library, never committed; each mode
 * reads what kvscope wrote and prints one line of results:
 *
 *   peer info GGUF                 BOS, EOS, whether EOS ends generation, and
 *                                  the warnings llama.cpp logged at load
 *   peer tok GGUF TEXT KV_TSV [special]
 *                                  llama.cpp's ids of TEXT against kvscope's
 *                                  (`kvscope tokenize --format tsv`), and the
 *                                  text rebuilt from llama.cpp's pieces;
 *                                  special: with the special tokens the file
 *                                  asks for (add_bos_token's first token)
 *   peer vocab GGUF INP OUT        llama.cpp's tokenizer test file: each case
 *                                  of INP written to OUT.N.txt, its expected
 *                                  ids (OUT file) checked against the library
 *   peer logits GGUF IDS T [int|intref]
 *                                  kvscope's greedy run of T tokens from IDS
 *                                  (its library, the same calls `kvscope run`
 *                                  makes; int: --int-dot, intref:
 *                                  --int-dot=ref, else --int-dot=off)
 *                                  against llama.cpp:
 *                                  the largest logit difference over the T
 *                                  steps, fed the same ids, and llama.cpp's
 *                                  own greedy tokens; where they first
 *                                  differ, both programs' top two logits,
 *                                  and the first near-tie (both top-2
 *                                  margins below the largest difference)
 *   peer text SEED BYTES OUT       seeded random mixed text (ASCII, UTF-8,
 *                                  contractions, digits, blank runs) */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"


static int warnings;
static char first_warning[512];

static void log_cb(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) {
        if (!warnings++)
            snprintf(first_warning, sizeof first_warning, "%s", text);
        char *nl = strchr(first_warning, '\n');
        if (nl)
            *nl = '\0';
    }
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "peer: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot read %s", path);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    fclose(f);
    if (!buf)
        die("out of memory");
    buf[n] = '\0';
    *len = n;
    return buf;
}

static struct llama_model *load(const char *path, int vocab_only)
{
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = vocab_only;
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = !getenv("PEER_NO_REPACK"); /* weights as stored, not repacked */
    struct llama_model *m = llama_model_load_from_file(path, mp);
    if (!m)
        die("llama.cpp cannot load %s: %s", path, warnings ? first_warning : "no reason logged");
    return m;
}

/* llama.cpp's ids of text[0..len), malloc'd, *n of them */
static llama_token *tokenize(const struct llama_vocab *v, const char *text, size_t len, int *n, int special)
{
    int cap = (int)len + 8;
    llama_token *ids = malloc((size_t)cap * sizeof *ids);
    *n = llama_tokenize(v, text, (int32_t)len, ids, cap, special, false);
    if (*n < 0)
        die("llama_tokenize failed (%d)", *n);
    return ids;
}

static int mode_info(const char *gguf)
{
    struct llama_model *m = load(gguf, 0);
    const struct llama_vocab *v = llama_model_get_vocab(m);
    llama_token eos = llama_vocab_eos(v), bos = llama_vocab_bos(v);
    char piece[64] = "";
    int n = eos >= 0 ? llama_token_to_piece(v, eos, piece, sizeof piece - 1, 0, true) : 0;
    piece[n > 0 ? n : 0] = '\0';
    printf("bos=%d add_bos=%d eos=%d eos_piece=%s eog=%d vocab=%d warnings=%d%s%s\n", bos, llama_vocab_get_add_bos(v),
           eos, piece, eos >= 0 && llama_vocab_is_eog(v, eos), llama_vocab_n_tokens(v), warnings,
           warnings ? " first: " : "",
           warnings ? first_warning : "");
    llama_model_free(m);
    return 0;
}

/* kvscope's ids from its tsv (index, id, bytes, piece) */
static int *read_tsv_ids(const char *path, int *n)
{
    size_t len;
    char *s = slurp(path, &len);
    int cap = 1024, k = 0;
    int *ids = malloc((size_t)cap * sizeof *ids);
    char *save = NULL;
    int header = 1;
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (header) {
            header = 0;
            continue;
        }
        long idx, id;
        if (sscanf(line, "%ld\t%ld", &idx, &id) != 2)
            break; /* the summary after the rows */
        if (k == cap)
            ids = realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
        ids[k++] = (int)id;
    }
    free(s);
    *n = k;
    return ids;
}

/* The text llama.cpp's pieces of ids rebuild; 1 when it is text[0..len). */
static int rebuilds(const struct llama_vocab *v, const llama_token *ids, int n, const char *text, size_t len)
{
    size_t at = 0;
    char buf[256];
    for (int i = 0; i < n; i++) {
        int k = llama_token_to_piece(v, ids[i], buf, sizeof buf, 0, false);
        if (k < 0 || at + (size_t)k > len || memcmp(text + at, buf, (size_t)k) != 0)
            return 0;
        at += (size_t)k;
    }
    return at == len;
}

static int mode_tok(const char *gguf, const char *textfile, const char *tsv, int special)
{
    struct llama_model *m = load(gguf, 1);
    const struct llama_vocab *v = llama_model_get_vocab(m);
    size_t len;
    char *text = slurp(textfile, &len);
    int nl, nk;
    llama_token *ids = tokenize(v, text, len, &nl, special);
    int *kv = read_tsv_ids(tsv, &nk);
    int diff = 0, first = -1;
    for (int i = 0; i < (nl > nk ? nl : nk); i++)
        if (i >= nl || i >= nk || ids[i] != kv[i]) {
            diff++;
            if (first < 0)
                first = i;
        }
    printf("bytes=%zu ids=%d kvscope_ids=%d differ=%d first=%d rebuilt=%s\n", len, nl, nk, diff, first,
           rebuilds(v, ids, nl, text, len) ? "same" : "differs");
    if (first >= 0) {
        fprintf(stderr, "peer: first difference at id %d:", first);
        for (int i = first > 3 ? first - 3 : 0; i < first + 4; i++)
            fprintf(stderr, " [%d: llama %d kvscope %d]", i, i < nl ? ids[i] : -1, i < nk ? kv[i] : -1);
        fprintf(stderr, "\n");
    }
    free(text);
    free(ids);
    free(kv);
    llama_model_free(m);
    return 0;
}

#define CASE_SEP "\n__ggml_vocab_test__\n"

static int mode_vocab(const char *gguf, const char *inp, const char *out_prefix)
{
    struct llama_model *m = load(gguf, 1);
    const struct llama_vocab *v = llama_model_get_vocab(m);
    size_t len, olen;
    char *text = slurp(inp, &len);
    char outfile[4096];
    snprintf(outfile, sizeof outfile, "%s", inp);
    size_t pl = strlen(outfile);
    if (pl > 4 && strcmp(outfile + pl - 4, ".inp") == 0)
        strcpy(outfile + pl - 4, ".out");
    char *expect = slurp(outfile, &olen);
    int cases = 0, bad = 0;
    char *p = text, *e = expect, *save = NULL;
    char *eline = strtok_r(e, "\n", &save);
    for (;;) {
        char *sep = strstr(p, CASE_SEP);
        if (!sep)
            break;
        size_t n = (size_t)(sep - p);
        char path[4096];
        snprintf(path, sizeof path, "%s.%d.txt", out_prefix, cases);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
            die("cannot write %s", path);
        int nl;
        llama_token *ids = tokenize(v, p, n, &nl, 0);
        /* the .out line: ids separated by spaces (an empty case: a blank line strtok skips) */
        char got[65536] = "";
        size_t at = 0;
        for (int i = 0; i < nl && at + 16 < sizeof got; i++)
            at += (size_t)snprintf(got + at, sizeof got - at, " %d", ids[i]);
        snprintf(path, sizeof path, "%s.%d.ids", out_prefix, cases);
        f = fopen(path, "w");
        fprintf(f, "%s\n", got);
        fclose(f);
        if (nl > 0) {
            if (!eline || strcmp(eline, got) != 0)
                bad++;
            eline = strtok_r(NULL, "\n", &save);
        }
        free(ids);
        cases++;
        p = sep + strlen(CASE_SEP);
    }
    printf("cases=%d library_vs_out_differ=%d\n", cases, bad);
    free(text);
    free(expect);
    llama_model_free(m);
    return 0;
}

/* kvscope's greedy run (kv_side.c, linked with its symbols hidden: kvscope
 * and ggml both define gguf_* functions) */
int peer_kvscope_greedy(const char *gguf, int int_dot, const int *prompt, int np, int T, int *gen, float **logits,
                        char *why, size_t cap);

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* the runner-up to x[best]: with the top logit, the margin a logit
 * difference between the programs has to beat to change the argmax */
static int second(const float *x, int n, int best)
{
    int s = best == 0;
    for (int i = 0; i < n; i++)
        if (i != best && x[i] > x[s])
            s = i;
    return s;
}

static int mode_logits(const char *gguf, const char *ids_csv, int T, int int_dot)
{
    llama_token prompt[512];
    int np = 0, kprompt[512];
    for (const char *c = ids_csv; *c && np < 512;) {
        kprompt[np] = prompt[np] = (llama_token)strtol(c, (char **)&c, 10);
        np++;
        if (*c == ',')
            c++;
    }
    if (T < 1 || T > 512)
        die("T from 1 to 512");
    int gen[512];
    float *klog;
    char why[512];
    const int V = peer_kvscope_greedy(gguf, int_dot, kprompt, np, T, gen, &klog, why, sizeof why);
    if (V < 0)
        die("kvscope: %s", why);
    struct llama_model *m = load(gguf, 0);
    const struct llama_vocab *v = llama_model_get_vocab(m);
    if (llama_vocab_n_tokens(v) != V)
        die("vocabularies differ: llama.cpp %d, kvscope %d", llama_vocab_n_tokens(v), V);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(np + T + 8);
    cp.n_batch = cp.n_ubatch = cp.n_ctx;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32; /* kvscope's cache here is f32 */
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *ctx = llama_init_from_model(m, cp);
    if (!ctx)
        die("llama.cpp cannot make a context");
    /* the prompt and kvscope's tokens but its last, one pass, logits at every position */
    const int n = np + T - 1;
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = i < np ? prompt[i] : gen[i - np];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(ctx, b) != 0)
        die("llama_decode failed");
    /* exact: the steps whose logits agree within 1e-4 (the same arithmetic
     * up to the order of float sums; on the integer path a step after an
     * activation's q8_0 rounding went the other way in one program is not) */
    double maxdiff = 0, maxmag = 0;
    int exact = 0;
    for (int s = 0; s < T; s++) {
        const float *l = llama_get_logits_ith(ctx, np - 1 + s), *k = klog + (size_t)s * V;
        double step = 0;
        for (int j = 0; j < V; j++) {
            double d = fabs((double)l[j] - k[j]);
            step = d > step ? d : step;
            maxmag = fabs(k[j]) > maxmag ? fabs(k[j]) : maxmag;
        }
        maxdiff = step > maxdiff ? step : maxdiff;
        exact += step <= 1e-4;
    }
    llama_batch_free(b);
    /* llama.cpp's own greedy tokens from the prompt */
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_token tok[1024];
    memcpy(tok, prompt, (size_t)np * sizeof *tok);
    int same = 0, first = -1;
    char at_first[256] = "";
    /* the steps both programs reach on the same ids (up to the first
     * divergence): their logits' largest difference there, and the first
     * step whose top-2 margin in both is below the row's largest logit
     * difference, a near-tie that either program may break either way */
    double stepdiff = 0;
    float *lmargin = malloc((size_t)T * sizeof *lmargin);
    struct llama_batch one = llama_batch_get_one(tok, np);
    for (int s = 0; s < T; s++) {
        if (llama_decode(ctx, one) != 0)
            die("llama_decode failed");
        const float *l = llama_get_logits_ith(ctx, -1), *k = klog + (size_t)s * V;
        int t = argmax(l, V), t2 = second(l, V, t);
        lmargin[s] = l[t] - l[t2];
        if (first < 0)
            for (int j = 0; j < V; j++)
                stepdiff = fabs((double)l[j] - k[j]) > stepdiff ? fabs((double)l[j] - k[j]) : stepdiff;
        if (t == gen[s])
            same++;
        else if (first < 0) {
            first = s;
            int k2 = second(k, V, gen[s]);
            snprintf(at_first, sizeof at_first, " kvscope_top2=%d:%.5f,%d:%.5f llama_top2=%d:%.5f,%d:%.5f", gen[s],
                     k[gen[s]], k2, k[k2], t, l[t], t2, l[t2]);
        }
        tok[np + s] = t;
        one = llama_batch_get_one(&tok[np + s], 1);
    }
    const double tie_below = maxdiff > stepdiff ? maxdiff : stepdiff;
    int tie = -1;
    for (int s = 0; s <= (first < 0 ? T - 1 : first) && tie < 0; s++) {
        const float *k = klog + (size_t)s * V;
        const int k1 = gen[s], k2 = second(k, V, k1);
        if (k[k1] - k[k2] < tie_below && lmargin[s] < tie_below)
            tie = s;
    }
    /* a divergence at a near-tie is the summation order's to decide */
    char margins[96] = "";
    if (first >= 0) {
        const float *k = klog + (size_t)first * V;
        const double km = k[gen[first]] - k[second(k, V, gen[first])], lm = lmargin[first];
        snprintf(margins, sizeof margins, " margins=%.3g,%.3g divergence_at_tie=%d", km, lm,
                 km < tie_below && lm < tie_below);
    }
    free(lmargin);
    printf("positions=%d max_logit_diff=%.3g step_logit_diff=%.3g largest_logit=%.3g exact_steps=%d greedy_same=%d/%d "
           "first_divergence=%d first_near_tie=%d%s%s\n",
           T, maxdiff, stepdiff, maxmag, exact, same, T, first, tie, margins, at_first);
    llama_free(ctx);
    llama_model_free(m);
    free(klog);
    return 0;
}

/* --- seeded random mixed text ----------------------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

static int mode_text(const char *seed, const char *bytes, const char *out)
{
    static const char *words[] = {
        "the", "And", "LORD", "said", "unto", "him", "a", "I", "x", "we", "it", "they", "shalt", "thou",
        "café", "naïve", "Äpfel", "straße", "über", "нещо", "на", "Български", "Việt", "Cửa", "日本語",
        "我想在", "工作", "🦙", "🚀", "😶‍🌫️", "κόσμε", "שלום", "مرحبا", "ñandú", "Ωmega", "½", "№", "™",
    };
    static const char *after[] = { "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'this", "'sweet", "'rent",
                                   "'veal", "'", "'S", "'LL", "'dd", "'mm" };
    static const char *marks[] = { ",", ".", ";", ":", "!", "?", "...", "--", "(", ")", "\"", "'", "—", "“",
                                   "”", "’", "«", "»", "¿", "#", "$", "%", "&", "*", "+", "=", "<>", "@" };
    static const char *blanks[] = { " ", " ", " ", " ", " ", " ", "  ", "   ", "\n", "\n\n", " \n", "\t",
                                    "\t\t", "\r\n", " \t ", "\n   ", "\u00a0", "\u3000" };
    rng_state = strtoull(seed, NULL, 10);
    const size_t want = strtoul(bytes, NULL, 10);
    FILE *f = fopen(out, "wb");
    if (!f)
        die("cannot write %s", out);
    size_t n = 0;
    while (n < want) {
        char buf[64];
        const char *s;
        switch (rnd(10)) {
        case 0: case 1: case 2: case 3:
            s = words[rnd(sizeof words / sizeof words[0])];
            break;
        case 4:
            snprintf(buf, sizeof buf, "%s%s", words[rnd(14)], after[rnd(sizeof after / sizeof after[0])]);
            s = buf;
            break;
        case 5:
            snprintf(buf, sizeof buf, "%u", rnd(4) ? rnd(100) : rnd(1000000000));
            s = buf;
            break;
        case 6:
            s = marks[rnd(sizeof marks / sizeof marks[0])];
            break;
        default:
            s = blanks[rnd(sizeof blanks / sizeof blanks[0])];
        }
        n += fwrite(s, 1, strlen(s), f);
    }
    fclose(f);
    return 0;
}

/* decode: llama.cpp's decode step on a GGUF, its cache (f16, llama.cpp's
 * default) filled to `ctx` positions once, by a prefill of seeded ids
 * (batches of 512, on every thread given); then `rounds` rounds, each
 * timing `steps` single-token steps at each thread count of the list, in
 * turn (each step's row taken out again, so every step sees ctx rows),
 * printing a line `threads=T ms=M ...` of the round's medians, then
 * running `between` (a shell command: the other program's round), if
 * given, so the two programs take turns on one fill. */
static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int mode_decode(const char *gguf, int ctx_len, int steps, const char *thread_list, int rounds,
                       const char *between)
{
    int threads[8], nt = 0, most = 1;
    for (const char *c = thread_list; *c && nt < 8; c += *c == ',')
        most = (threads[nt] = (int)strtol(c, (char **)&c, 10)) > most ? threads[nt] : most, nt++;
    if (ctx_len < 1 || steps < 1 || steps > 64 || nt == 0 || rounds < 1)
        die("decode: a context, 1 .. 64 steps, threads (1,2) and rounds");
    struct llama_model *m = load(gguf, 0);
    const int V = llama_vocab_n_tokens(llama_model_get_vocab(m));
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(ctx_len + 8);
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_threads = cp.n_threads_batch = most;
    struct llama_context *ctx = llama_init_from_model(m, cp);
    if (!ctx)
        die("llama.cpp cannot make a context of %d", ctx_len + 8);
    rng_state = 48;
    struct llama_batch b = llama_batch_init(512, 0, 1);
    for (int p0 = 0; p0 < ctx_len; p0 += 512) {
        b.n_tokens = ctx_len - p0 < 512 ? ctx_len - p0 : 512;
        for (int i = 0; i < b.n_tokens; i++) {
            b.token[i] = (llama_token)rnd((uint32_t)V);
            b.pos[i] = p0 + i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = p0 + i == ctx_len - 1;
        }
        if (llama_decode(ctx, b) != 0)
            die("llama_decode failed filling the cache");
    }
    llama_batch_free(b);
    for (int r = 0; r < rounds; r++) {
        double t[8][64];
        for (int s = 0; s < steps; s++)
            for (int k = 0; k < nt; k++) {
                llama_set_n_threads(ctx, threads[k], threads[k]);
                llama_token tok = (llama_token)rnd((uint32_t)V);
                struct llama_batch one = llama_batch_get_one(&tok, 1);
                const double t0 = now_s();
                if (llama_decode(ctx, one) != 0)
                    die("llama_decode failed");
                (void)llama_get_logits_ith(ctx, -1);
                t[k][s] = now_s() - t0;
                llama_memory_seq_rm(llama_get_memory(ctx), 0, ctx_len, -1); /* back to ctx rows */
            }
        for (int k = 0; k < nt; k++) {
            qsort(t[k], (size_t)steps, sizeof t[k][0], cmp_double);
            printf("%sthreads=%d ms=%.3f", k ? " " : "", threads[k], 1e3 * t[k][steps / 2]);
        }
        printf("\n");
        fflush(stdout);
        if (between && *between && system(between) != 0)
            die("decode: '%s' failed", between);
    }
    llama_free(ctx);
    llama_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    llama_log_set(log_cb, NULL);
    if (argc >= 2 && strcmp(argv[1], "text") == 0 && argc == 5)
        return mode_text(argv[2], argv[3], argv[4]);
    const char *dir = getenv("PEER_LIB");
    if (dir)
        ggml_backend_load_all_from_path(dir);
    else
        ggml_backend_load_all();
    llama_backend_init();
    if (argc == 3 && strcmp(argv[1], "info") == 0)
        return mode_info(argv[2]);
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "tok") == 0)
        return mode_tok(argv[2], argv[3], argv[4], argc == 6 && strcmp(argv[5], "special") == 0);
    if (argc == 5 && strcmp(argv[1], "vocab") == 0)
        return mode_vocab(argv[2], argv[3], argv[4]);
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "logits") == 0)
        return mode_logits(argv[2], argv[3], atoi(argv[4]), argc < 6 ? 0 : strcmp(argv[5], "int") == 0 ? 1 : strcmp(argv[5], "intref") == 0 ? 2 : 0);
    if ((argc == 7 || argc == 8) && strcmp(argv[1], "decode") == 0)
        return mode_decode(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5], atoi(argv[6]), argc == 8 ? argv[7] : NULL);
    fprintf(stderr, "usage: peer info|tok|vocab|logits|decode|text ... (see peer.c)\n");
    return 2;
}
