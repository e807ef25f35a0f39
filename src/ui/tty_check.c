/* tty_check.c: is there a terminal the view can drive? (Kept apart from
 * tty.c: term.h defines macros with common names.) */
/* ncurses' wide-character API (cchar_t, wget_wch) and wcwidth, also when
 * the build does not pass ncursesw's own flags (the sanitizer build) */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <curses.h>
#include <stdlib.h>
#include <term.h>
#include <unistd.h>

#include "ui/tty.h"

int tty_check(Err *e)
{
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
        return err_set(e, ERR_USAGE,
                       "the interactive view needs a terminal; for text output use kvscope run or kvscope example");
    const char *term = getenv("TERM");
    if (!term || !*term)
        return err_set(e, ERR_USAGE, "TERM is not set, so the terminal is unknown (try TERM=xterm-256color)");
    int status = 0;
    if (setupterm(term, STDOUT_FILENO, &status) != OK)
        return err_set(e, ERR_USAGE, "unknown terminal type '%s' (TERM): %s (try TERM=xterm-256color)", term,
                       status == 0 ? "no terminfo entry for it" : "the terminfo database was not found");
    /* a terminal that cannot move the cursor (TERM=dumb) would get a garbled
     * screen: refuse it as an unknown one is refused */
    const char *cup = tigetstr("cup");
    const int addressable = cup && cup != (char *)-1;
    del_curterm(cur_term);
    if (!addressable)
        return err_set(e, ERR_USAGE, "terminal type '%s' (TERM) cannot move the cursor, which the view needs "
                       "(try TERM=xterm-256color)", term);
    return 0;
}
