/* page_table.h: a sequence's rows through its block table (lesson 6).
 *
 * A paged cache keeps rows in a pool of pages of `page_rows` rows each. A
 * sequence owns no memory of its own: its block table lists, for its first,
 * second, ... page of positions, which pool page holds them. Position pos
 * is row pos % page_rows of the sequence's page pos / page_rows. */
#ifndef KVSCOPE_EXERCISE_PAGE_TABLE_H
#define KVSCOPE_EXERCISE_PAGE_TABLE_H

#include <stddef.h>

typedef struct {
    size_t page_rows;   /* P: rows per page */
    size_t dim;         /* floats per row */
    const float *pool;  /* [n_pool_pages][page_rows][dim]: every page of the pool */
    const int *table;   /* the block table: table[i] is the pool page of the sequence's page i */
    size_t len;         /* the sequence holds positions 0 .. len - 1 */
} PagedSeq;

/* The row of position pos (pos < len). */
const float *paged_row(const PagedSeq *s, size_t pos);

/* Entries the block table needs for len positions (0 for none). */
size_t paged_pages(const PagedSeq *s);

/* Rows reserved but empty: the end of the last page, after position len - 1. */
size_t paged_tail_waste(const PagedSeq *s);

#endif
