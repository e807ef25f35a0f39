/* window_check.c: checks lessons/exercises/window.c (lesson 7).
 *
 * The reference rows are real ones: the K and V rows (layer 0, KV head 0)
 * that the tiny model leaves in an exact contiguous cache after generating
 * from a short prompt. They are appended one at a time to the learner's
 * window, and after every append the window must hold exactly the newest
 * min(n, W) of them, oldest first, for several window sizes W. */
#include <string.h>

#include "harness.h"
#include "window.h"

#define PROMPT 6
#define GENERATE 10

static void print_row(const char *label, const float *r, size_t n)
{
    printf("  %s [", label);
    for (size_t i = 0; i < n && i < 4; i++)
        printf("%s%.4f", i ? ", " : " ", r[i]);
    printf("%s ]\n", n > 4 ? ", ..." : "");
}

int main(void)
{
    Model m;
    if (harness_model(&m, "tiny") < 0)
        return 2;
    const int prompt[PROMPT] = { 3, 14, 15, 92, 65, 35 };
    KvCache *cache;
    KvBlock b;
    if (harness_reference_rows(&m, prompt, PROMPT, GENERATE, &cache, &b) < 0)
        return 2;
    const size_t n = b.n, dim = m.cfg.head_dim;
    printf("reference: %zu K and V rows of %zu values (tiny model, layer 0, KV head 0)\n", n, dim);

    static const size_t windows[] = { 1, 4, 7, 15, 20 };
    Tally t = { 0, 0 };
    for (size_t wi = 0; wi < sizeof windows / sizeof windows[0]; wi++) {
        const size_t W = windows[wi];
        Window w;
        if (window_init(&w, W, dim) < 0) {
            printf("window_init(%zu, %zu) failed\n", W, dim);
            return 1;
        }
        for (size_t p = 0; p < n; p++) {
            window_append(&w, harness_row(b.k, b.k_stride, p), harness_row(b.v, b.v_stride, p));
            const size_t want_len = p + 1 < W ? p + 1 : W, want_first = p + 1 - want_len;
            size_t len = window_length(&w), first = window_first_pos(&w);
            if (tally(&t, len == want_len))
                printf("window %zu, after appending position %zu: expected length %zu, got %zu\n", W, p,
                       want_len, len);
            if (tally(&t, first == want_first))
                printf("window %zu, after appending position %zu: expected the oldest position %zu, got %zu\n",
                       W, p, want_first, first);
            if (len != want_len || first != want_first)
                continue;
            for (size_t i = 0; i < len; i++) {
                const float *ek = harness_row(b.k, b.k_stride, want_first + i);
                const float *ev = harness_row(b.v, b.v_stride, want_first + i);
                const float *gk = window_k(&w, i), *gv = window_v(&w, i);
                const int k_ok = memcmp(ek, gk, dim * sizeof(float)) == 0;
                const int v_ok = memcmp(ev, gv, dim * sizeof(float)) == 0;
                if (tally(&t, k_ok && v_ok)) {
                    printf("window %zu, after appending position %zu: row %zu should be position %zu, and its %s\n",
                           W, p, i, want_first + i,
                           k_ok ? "V row differs (K is right)" : v_ok ? "K row differs (V is right)"
                                                                  : "K and V rows both differ");
                    if (!k_ok) {
                        print_row("expected K", ek, dim);
                        print_row("got      K", gk, dim);
                    }
                    if (!v_ok) {
                        print_row("expected V", ev, dim);
                        print_row("got      V", gv, dim);
                    }
                }
            }
        }
        window_free(&w);
    }
    kv_free(cache);
    model_free(&m);
    return verdict(&t, "window states");
}
