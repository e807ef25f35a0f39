/* panels.h: the pieces the simulation and compare screens are made of.
 * Each draws one session into a Rect (its title rule in the first row) and
 * never outside it. */
#ifndef KVSCOPE_UI_PANELS_H
#define KVSCOPE_UI_PANELS_H

#include "sim/session.h"
#include "ui/frame.h"
#include "ui/view.h"

/* Cache map of sequence seq (< session_batch): layers x positions, each
 * slot's state by glyph; an axis row marks this pass's slots and page
 * starts, and a row under it sequence 0's text. */
void panel_map(Frame *f, Rect r, const View *v, const Session *s, size_t seq, const char *title, int focused);
/* Counters of this pass, the run so far and its uncached equivalent. */
void panel_counters(Frame *f, Rect r, const View *v, const Session *s, int focused);
/* Attention weights of (v->layer, v->head): query positions x key positions. */
void panel_heat(Frame *f, Rect r, const View *v, const Session *s, int focused);
/* Every pass on the machine's roofline (v->roofs): log-log, the newest marked. */
void panel_roofline(Frame *f, Rect r, const View *v, const Session *s, int focused);
/* Per-pass FLOPs, cached and uncached, on one scale. */
void panel_spark(Frame *f, Rect r, const View *v, const Session *s, int focused);
/* The prompt and the tokens generated, the newest marked. */
void panel_tokens(Frame *f, Rect r, const View *v, const Session *s, int focused);
/* Token id as the panels show it: its piece (a space as ␣, control bytes
 * escaped), "<id>" for an id the tokenizer lacks, the id without one. */
const char *panel_token_label(const Tokenizer *tk, int id, char *buf, size_t cap);
/* The first `cols` display columns of s, in place (whole UTF-8 characters). */
char *panel_clip(char *s, int cols);
/* Row y, under columns of cw cells from x = lw, one per position 0..P-1:
 * the start of each position's piece, `name` at the left. Past a piece's
 * leading space when a piece gets one column: the letters read better; a
 * byte (\xHH) in fewer than 4 columns as its hex digits HH, or an ellipsis
 * in one. */
void panel_token_axis(Frame *f, Rect r, int y, const char *name, int lw, int cw, size_t P, const Tokenizer *tk,
                      const int *tok);

/* The glyph and role of a slot: its state (CellState) and, when held, its
 * formats: f32, f16, or quantized (any other format). */
Glyph panel_cell_glyph(int state, int k_fmt, int v_fmt, int *role);
/* The page table and pool of a paged cache (nothing for another layout). */
void panel_pages(Frame *f, Rect r, const Session *s, int focused);
/* Rows panel_pages needs: 0 when the cache has no pages. */
int panel_pages_height(const Session *s);
/* The shade and role of an attention weight. */
Glyph panel_heat_glyph(float w, int *role);
/* An encoder-decoder's recorded beam search at v->replay_step: the whole
 * simulation screen when the view runs one (panel_beams.c). */
void panel_beams(Frame *f, Rect body, const View *v);
/* A recorded serving run at v->replay_step: the pool's pages by the request
 * holding them, the requests, the step's counters (panel_serving.c). */
void panel_serving(Frame *f, Rect body, const View *v);
/* Recorded speculative decoding at v->replay_step: both caches' rows, the
 * round's proposals, the run's counts (panel_speculate.c). */
void panel_speculate(Frame *f, Rect body, const View *v);
/* What the newest pass did, in one line (shared by sim and compare). */
void panel_what(Frame *f, Rect r, const Session *s);

#endif
