/* rope_order.h: the two orders in which checkpoints lay out RoPE's pairs.
 *
 *   pairs   rotate (2i, 2i+1) of each head: Meta's original LLaMA code,
 *           llama2.c, ggml's "normal" RoPE, and kvscope (kernels/rope_ref.c)
 *   halves  rotate (i, i + head_dim/2): Hugging Face's rotate_half, ggml's
 *           "neox" RoPE
 *
 * Both rotate pair i by pos * theta^(-2i/head_dim). A projection written for
 * one order runs under the other once its output rows are permuted within
 * each head: this is what llama.cpp's converter does to the Q and K of a
 * Hugging Face checkpoint, so a GGUF `llama` file is in pair order already.
 * Attention scores are dot products of Q and K rows, which the same
 * permutation on both leaves unchanged; V and the rest are untouched. */
#ifndef KVSCOPE_CKPT_ROPE_ORDER_H
#define KVSCOPE_CKPT_ROPE_ORDER_H

#include <stddef.h>

/* Reorder the rows of w ([n_heads * head_dim][cols], a Q or K projection)
 * from halves order to pairs order: within each head, new row 2i + j is
 * old row i + j * head_dim/2 (i < head_dim/2, j in {0, 1}). head_dim even,
 * head_dim <= 4096. Returns -1 (w untouched) when head_dim is odd or too
 * large or scratch memory runs out. */
int rope_rows_halves_to_pairs(float *w, size_t n_heads, size_t head_dim, size_t cols);

/* The inverse: pairs order to halves order. */
int rope_rows_pairs_to_halves(float *w, size_t n_heads, size_t head_dim, size_t cols);

#endif
