/* train/: learning a decoder's weights from text: the training forward that
 * keeps every activation, the backward pass, AdamW, and the training loop.
 * Uses model/ (the weights and their layout), kernels/ (the matmul, norm,
 * RoPE and SwiGLU kernels, the f32 dot and axpy), stats/ and util/; prints
 * nothing.
 *
 * backprop.h: one sequence through the model and back. The forward is the
 * engine's uncached forward (the same kernels, the same order), with every
 * activation kept for the backward; the loss is the mean cross-entropy of
 * each next token; the backward adds d loss / d weight into a gradient
 * model of the same shape (train_grad_init). Decoder-only GQA models with
 * their own weights per layer. */
#ifndef KVSCOPE_TRAIN_BACKPROP_H
#define KVSCOPE_TRAIN_BACKPROP_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "util/err.h"

typedef struct BackpropState BackpropState;

/* Scratch for sequences of up to max_len tokens of model config c.
 * *out is NULL on failure. */
int backprop_init(BackpropState **out, const Config *c, size_t max_len, Err *e);
void backprop_free(BackpropState *s);

/* Is config c one the trainer can train? ERR_USAGE saying why not. */
int backprop_check_config(const Config *c, Err *e);

/* The loss of predicting tokens[1..len] from tokens[0..len-1] (len + 1
 * ids, each below vocab): mean -ln p, in nats. logits, when not NULL,
 * receives [len][vocab]. */
double backprop_forward(const Model *m, BackpropState *s, const int *tokens, size_t len, float *logits);

/* After backprop_forward on the same tokens: add scale * d loss / d w for
 * every weight w of m into grad (a model of the same config whose arena
 * holds gradients). */
void backprop_backward(const Model *m, BackpropState *s, Model *grad, float scale);

/* Floating-point operations done so far by the forwards and backwards of
 * s: the matmuls (2 per multiply-add, as the kernels count them) and the
 * attention's products; the norms, softmax and RoPE are left out. */
uint64_t backprop_flops(const BackpropState *s);

#endif
