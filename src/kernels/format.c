#include "kernels/format.h"

size_t format_row_bytes(Format f, size_t n)
{
    switch (f) {
    case FMT_F32:
        return n * sizeof(float);
    }
    return 0;
}

const char *format_name(Format f)
{
    switch (f) {
    case FMT_F32:
        return "f32";
    }
    return "?";
}
