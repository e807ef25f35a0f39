#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

/* May a query at position qpos see the row at position pos? */
static int visible(const AttnArgs *a, size_t pos, size_t qpos)
{
    return pos <= qpos && (a->window == 0 || pos + a->window > qpos);
}

/* Rows of the blocks that query position qpos may see. */
static size_t visible_rows(const AttnArgs *a, size_t qpos)
{
    size_t rows = 0;
    for (size_t b = 0; b < a->n_blocks; b++)
        for (size_t r = 0; r < a->blocks[b].n; r++)
            rows += visible(a, a->blocks[b].pos + r, qpos);
    return rows;
}

void attend_ref(const AttnArgs *a, Counters *ctr)
{
    const size_t hd = a->head_dim, G = a->group;
    const float scale = 1.0f / sqrtf((float)hd);

    for (size_t t = 0; t < a->n_q; t++) {
        const size_t qpos = a->pos0 + t;
        const float *q = a->q + t * a->q_stride; /* [G][hd] */
        float *out = a->out + t * a->out_stride; /* [G][hd] */
        const size_t n = visible_rows(a, qpos);
        float *s = a->scores; /* [G][n] */

        /* scores: one pass over K, each row serving the whole group */
        size_t j = 0;
        for (size_t b = 0; b < a->n_blocks && j < n; b++) {
            const KvBlock *blk = &a->blocks[b];
            for (size_t r = 0; r < blk->n && j < n; r++) {
                if (!visible(a, blk->pos + r, qpos))
                    continue;
                const float *k = (const float *)((const char *)blk->k + r * blk->k_stride);
                for (size_t g = 0; g < G; g++) {
                    const float *qg = q + g * hd;
                    float dot = 0.0f;
                    for (size_t i = 0; i < hd; i++)
                        dot += qg[i] * k[i];
                    s[g * n + j] = dot * scale;
                }
                j++;
            }
        }

        /* softmax per head, max-subtracted for range */
        for (size_t g = 0; g < G; g++) {
            float *sg = s + g * n;
            float mx = -INFINITY;
            for (size_t i = 0; i < n; i++)
                mx = sg[i] > mx ? sg[i] : mx;
            float sum = 0.0f;
            for (size_t i = 0; i < n; i++) {
                sg[i] = expf(sg[i] - mx);
                sum += sg[i];
            }
            for (size_t i = 0; i < n; i++)
                sg[i] /= sum;
        }

        if (a->probs)
            for (size_t g = 0; g < G; g++)
                memcpy(a->probs + t * a->probs_q_stride + g * a->probs_g_stride, s + g * n, n * sizeof(float));

        /* out = weights . V: again one pass, each V row serving the group */
        for (size_t g = 0; g < G; g++)
            memset(out + g * hd, 0, hd * sizeof(float));
        j = 0;
        for (size_t b = 0; b < a->n_blocks && j < n; b++) {
            const KvBlock *blk = &a->blocks[b];
            for (size_t r = 0; r < blk->n && j < n; r++) {
                if (!visible(a, blk->pos + r, qpos))
                    continue;
                const float *v = (const float *)((const char *)blk->v + r * blk->v_stride);
                for (size_t g = 0; g < G; g++) {
                    const float w = s[g * n + j];
                    float *og = out + g * hd;
                    for (size_t i = 0; i < hd; i++)
                        og[i] += w * v[i];
                }
                j++;
            }
        }
        if (ctr) {
            ctr->flops_qk += 2 * (uint64_t)G * n * hd;
            ctr->flops_av += 2 * (uint64_t)G * n * hd;
            ctr->flops_softmax += 5 * (uint64_t)G * n;
            ctr->kv_bytes_read += (uint64_t)n * 2 * hd * sizeof(float);
        }
    }
}
