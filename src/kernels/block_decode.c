/* block_decode.c: one stored K/V row back to f32, whatever its format: what
 * naive attention and the view's cache inspector read (kernels.h). */
#include "kernels/attend_rows.h"

void block_decode_row(const FormatOps *codec, const KvBlock *blk, size_t r, size_t head_dim, float *k, float *v)
{
    codec[blk->k_fmt].dequantize(k, attend_row(blk->k, blk->k_stride, r), head_dim);
    for (size_t i = 0; blk->k_chan && i < head_dim; i++)
        k[i] = k[i] * fp16_to_f32(blk->k_chan[i]) + fp16_to_f32(blk->k_chan[head_dim + i]);
    codec[blk->v_fmt].dequantize(v, attend_row(blk->v, blk->v_stride, r), head_dim);
}
