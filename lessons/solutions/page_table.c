/* page_table.c: a sequence's rows through its block table (lesson 6): the
 * reference solution. */
#include "page_table.h"

const float *paged_row(const PagedSeq *s, size_t pos)
{
    const size_t page = pos / s->page_rows, row = pos % s->page_rows;
    return s->pool + ((size_t)s->table[page] * s->page_rows + row) * s->dim;
}

size_t paged_pages(const PagedSeq *s)
{
    return (s->len + s->page_rows - 1) / s->page_rows;
}

size_t paged_tail_waste(const PagedSeq *s)
{
    return paged_pages(s) * s->page_rows - s->len;
}
