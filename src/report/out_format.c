#include "report/out_format.h"

#include <string.h>

int out_format_parse(const char *text, OutFormat *out, Err *e)
{
    static const char *const names[] = { [OUT_TABLE] = "table", [OUT_TSV] = "tsv", [OUT_JSON] = "json" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(text, names[i]) == 0) {
            *out = (OutFormat)i;
            return 0;
        }
    return err_set(e, ERR_USAGE, "--format: '%s' is not one of table, tsv, json", text);
}
