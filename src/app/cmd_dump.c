/* placeholder: replaced by the real command */
#include "app/commands.h"
#include <stdio.h>
int cmd_dump(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kvscope: 'dump' is not built yet\n");
    return 1;
}
