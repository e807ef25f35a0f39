/* gguf_vocab.h: the tokenizer a GGUF export carries (gguf_export.c), and
 * a byte-level one read back (checkpoint.c). */
#ifndef KVSCOPE_MODEL_GGUF_VOCAB_H
#define KVSCOPE_MODEL_GGUF_VOCAB_H

#include <stddef.h>

#include "ckpt/ckpt.h"
#include "ckpt/gguf.h"
#include "text/tokenizer.h"
#include "util/err.h"

/* The end-of-text token an export adds, GPT-2's name for it. */
#define END_OF_TEXT "<|endoftext|>"

/* Add a byte-level tokenizer (tokenizer_byte_level) to w's metadata as
 * llama.cpp's "gpt2" model with the "gpt-2" pre-tokenizer:
 *   tokenizer.ggml.tokens      each id's bytes in GPT-2's byte alphabet
 *                              (byte_alphabet.h), then, up to vocab, one
 *                              "[unused N]" per id it never makes, but
 *                              END_OF_TEXT at id eos (>= 0: past the
 *                              tokenizer's ids; -1: none)
 *   tokenizer.ggml.token_type  1 (normal) for the tokenizer's ids, 3 (control)
 *                              for eos, 5 (unused) for the others past them
 *   tokenizer.ggml.merges      "A B" per merge, in rank order
 *   tokenizer.ggml.add_bos_token  true when tok puts a first token (tokenizer_set_bos,
 *                              a model's add_bos): that id must be eos
 *   tokenizer.ggml.bos_token_id, eos_token_id  eos, when there is one (as
 *                              GPT-2's): llama.cpp ends generation there
 * ERR_USAGE when tok is not byte-level or makes more ids than vocab. */
int gguf_vocab_write(GgufWriter *w, const Tokenizer *tok, size_t vocab, int eos, Err *e);

/* The merges of a "gpt2" vocabulary v (CKPT_VOCAB_BPE) as id pairs, when
 * it is laid out as gguf_vocab_write writes one: ids 0..255 the bytes in
 * order, id 256 + m the joined bytes of the two earlier ids merge m names,
 * no two of those ids the same bytes, at most BPE_MAX_VOCAB of them. Then 1
 * with *merges malloc'd (v->n_merges pairs; the caller frees). A vocabulary
 * laid out otherwise (a real GPT-2's or Llama 3's: their ids are not in
 * byte order) gives 0 with why[0..cap) saying where it differs; -1 (e set)
 * when memory runs out. */
int gguf_vocab_merges(const CkptVocab *v, int (**merges)[2], char *why, size_t cap, Err *e);

/* A checkpoint's SentencePiece-style vocabulary (CKPT_VOCAB_SPM) as the
 * text/ tokenizer takes it (pointing into v). */
SpmVocab gguf_vocab_spm(const CkptVocab *v);

/* Add such a vocabulary to w's metadata as llama.cpp's "llama" model:
 * tokenizer.ggml.tokens (each piece as the vocabulary writes it, but a
 * space written U+2581, as GGUF's vocabularies write it, where llama2.c's
 * tokenizer.bin writes ' '), scores, token_type (given, or as spm.h infers
 * them), the BOS, EOS and unknown ids it has, add_bos_token and
 * add_space_prefix. ERR_RUNTIME when memory runs out. */
int gguf_vocab_write_spm(GgufWriter *w, const CkptVocab *v, Err *e);

#endif
