/* serve_workload.h: the chat and few-shot workloads of sim/serve.h
 * (ServeWorkload), drawn for the serving loop. Nothing here prints. */
#ifndef KVSCOPE_SIM_SERVE_WORKLOAD_H
#define KVSCOPE_SIM_SERVE_WORKLOAD_H

#include <gsl/gsl_rng.h>
#include <stddef.h>

#include "sim/serve.h"

/* A chat turn's arrival until the turn before it has finished. */
#define SERVE_ARRIVAL_LATER SIZE_MAX

/* Conversations of a CHAT workload: requests r and r + users are turns of
 * one conversation, one after the other. */
size_t serve_chat_users(const ServeOptions *o);

/* The most positions one request of o's workload holds (its prompt and
 * output, the last token never fed), and the shortest prompt. */
void serve_workload_lengths(const ServeOptions *o, size_t *shortest, size_t *longest);

/* Draw req[0 .. o->n_requests) of a CHAT or FEWSHOT workload from rng:
 * arrival, prompt_len, n_output and prompt (malloc'd, the caller's). A chat
 * turn after the first gets arrival SERVE_ARRIVAL_LATER, pause[r] its steps
 * after the previous turn finishes, and only its new message, at the end of
 * its prompt (serve_chat_next writes the rest). Returns the latest arrival
 * drawn plus every pause (a bound on the run's arrivals); SIZE_MAX when
 * memory runs out. */
size_t serve_workload_draw(const ServeOptions *o, size_t vocab, gsl_rng *rng, ServeRequest *req, size_t *pause);

/* Chat request r has finished at `step`: the next turn of its conversation
 * (if any) gets its prompt (r's prompt, the tokens r's first sample
 * generated, its own message) and its arrival. Returns the next turn's
 * index, or SIZE_MAX when r was the conversation's last. */
size_t serve_chat_next(const ServeOptions *o, ServeRequest *req, const size_t *pause, size_t r, size_t step);

#endif
