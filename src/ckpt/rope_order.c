#include "ckpt/rope_order.h"

#include <stdlib.h>
#include <string.h>

/* Row `to_pairs ? 2i + j : i + j*half` of each head's output takes row
 * `to_pairs ? i + j*half : 2i + j` of the input. */
static int permute(float *w, size_t n_heads, size_t head_dim, size_t cols, int to_pairs)
{
    if (head_dim % 2 != 0 || head_dim > 4096)
        return -1;
    size_t half = head_dim / 2, row = cols * sizeof(float);
    float *tmp = malloc(head_dim * row); /* [head_dim][cols]: one head's rows */
    if (!tmp && head_dim > 0 && cols > 0)
        return -1;
    for (size_t h = 0; h < n_heads; h++) {
        float *head = w + h * head_dim * cols;
        memcpy(tmp, head, head_dim * row);
        for (size_t i = 0; i < half; i++)
            for (size_t j = 0; j < 2; j++) {
                size_t pair = 2 * i + j, halves = i + j * half;
                memcpy(head + (to_pairs ? pair : halves) * cols, tmp + (to_pairs ? halves : pair) * cols, row);
            }
    }
    free(tmp);
    return 0;
}

int rope_rows_halves_to_pairs(float *w, size_t n_heads, size_t head_dim, size_t cols)
{
    return permute(w, n_heads, head_dim, cols, 1);
}

int rope_rows_pairs_to_halves(float *w, size_t n_heads, size_t head_dim, size_t cols)
{
    return permute(w, n_heads, head_dim, cols, 0);
}
