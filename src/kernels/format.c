#include "kernels/format.h"

#include <string.h>

/* One row per format, in enum order: the sizes of its block layout. */
typedef struct {
    const char *name;
    size_t block_values; /* values per block */
    size_t block_bytes;  /* bytes per block */
    size_t row_extra;    /* bytes once per row (per-row fp16 scale) */
} FormatTraits;

static const FormatTraits traits[FMT_COUNT] = {
    [FMT_F32] = { "f32", 1, 4, 0 },
    [FMT_F16] = { "f16", 1, 2, 0 },
    [FMT_Q8_0] = { "q8_0", 32, 2 + 32, 0 },     /* fp16 d, int8 qs[32] */
    [FMT_Q4_0] = { "q4_0", 32, 2 + 32 / 2, 0 }, /* fp16 d, uint8 qs[16] */
    [FMT_INT4] = { "int4", 8, 4, 2 },           /* uint32 of 8 nibbles; fp16 scale per row */
    [FMT_FP4] = { "fp4", 8, 4, 2 },             /* uint32 of 8 E2M1 codes; fp16 scale per row */
    [FMT_U4] = { "u4", 8, 4, 0 },               /* uint32 of 8 unsigned 4-bit codes; scales per channel */
    [FMT_U2] = { "u2", 16, 4, 0 },              /* uint32 of 16 unsigned 2-bit codes; scales per channel */
};

const char format_names[] = "f32, f16, q8_0, q4_0, int4, fp4, u4, u2";
const char format_row_names[] = "f32, f16, q8_0, q4_0, int4, fp4";

static const FormatTraits *traits_of(Format f)
{
    return (unsigned)f < FMT_COUNT ? &traits[f] : NULL;
}

size_t format_row_bytes(Format f, size_t n)
{
    const FormatTraits *t = traits_of(f);
    if (!t)
        return 0;
    size_t blocks = (n + t->block_values - 1) / t->block_values; /* whole blocks */
    return blocks * t->block_bytes + t->row_extra;
}

const char *format_name(Format f)
{
    const FormatTraits *t = traits_of(f);
    return t ? t->name : "?";
}

size_t format_block_values(Format f)
{
    const FormatTraits *t = traits_of(f);
    return t ? t->block_values : 0;
}

size_t format_block_bytes(Format f)
{
    const FormatTraits *t = traits_of(f);
    return t ? t->block_bytes : 0;
}

size_t format_row_extra(Format f)
{
    const FormatTraits *t = traits_of(f);
    return t ? t->row_extra : 0;
}

int format_parse(const char *name, Format *out)
{
    for (int i = 0; i < FMT_COUNT; i++) {
        if (name && strcmp(name, traits[i].name) == 0) {
            *out = (Format)i;
            return 0;
        }
    }
    return -1;
}

int format_is_quantized(Format f)
{
    return f == FMT_Q8_0 || f == FMT_Q4_0 || f == FMT_INT4 || f == FMT_FP4 || format_is_per_channel(f);
}

int format_is_per_channel(Format f)
{
    return f == FMT_U4 || f == FMT_U2;
}
