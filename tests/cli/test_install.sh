# test_install.sh: make install puts a kvscope that works from anywhere, with
# its man page and completion; make uninstall takes all of it away. The man
# page passes man's and lexgrog's checks and describes every option.

inst=$(mktemp -d)
bindir=$(dirname "$KV")
run "install" make --no-print-directory install BUILD="$bindir" DESTDIR="$inst" PREFIX=/usr
if [ "$status" -eq 0 ] && [ -x "$inst/usr/bin/kvscope" ] && [ -f "$inst/usr/share/man/man1/kvscope.1" ] &&
    [ -f "$inst/usr/share/bash-completion/completions/kvscope" ] &&
    [ -f "$inst/usr/share/kvscope/lib/libkvscope.a" ] && [ -f "$inst/usr/share/kvscope/data/models/tiny.ini" ]
then ok "install: binary, data, library, man page and completion in place"
else bad "install: binary, data, library, man page and completion in place" "exit $status" "$(tail -c 300 "$err")"; fi

# the installed binary, from another directory, with no hint where its files are
ikv="$inst/usr/bin/kvscope"
here=$(pwd)
cd "$inst" || exit 1
run "installed: calc finds its models" env -u KVSCOPE_DATA "$ikv" calc --model tiny
[ "$status" -eq 0 ] && grep -q 'tiny' "$out" && ok "installed: calc finds its models" ||
    bad "installed: calc finds its models" "exit $status" "$(head -c 300 "$err")"
run "installed: run generates" env -u KVSCOPE_DATA "$ikv" run --tokens 2 --prompt hi
[ "$status" -eq 0 ] && grep -q '^text (sequence 0' "$out" && ok "installed: run generates" ||
    bad "installed: run generates" "exit $status" "$(head -c 300 "$err")"
run "installed: a lesson's checks and its exercise" env -u KVSCOPE_DATA HOME="$inst" "$ikv" lesson check memory-math
[ "$status" -eq 1 ] && grep -q 'checks' "$out" && grep -q 'TODO\|exercise' "$out" &&
    ! grep -q 'cannot find' "$out" "$err" && ok "installed: a lesson's checks and its exercise (the starter fails)" ||
    bad "installed: a lesson's checks and its exercise (the starter fails)" "exit $status" "$(tail -c 400 "$out")" \
        "$(head -c 300 "$err")"
run "installed: the figures' scripts" env -u KVSCOPE_DATA "$ikv" plot memory --out "$inst/figs" --term dumb
[ "$status" -eq 0 ] && [ -f "$inst/figs/memory.gp" ] && ok "installed: the figures' scripts" ||
    bad "installed: the figures' scripts" "exit $status" "$(head -c 300 "$err")"
cd "$here" || exit 1
run "installed: man finds the page" man -M "$inst/usr/share/man" kvscope
[ "$status" -eq 0 ] && grep -q 'EXIT STATUS' "$out" && ok "installed: man finds the page" ||
    bad "installed: man finds the page" "exit $status" "$(head -c 300 "$err")"

run "uninstall" make --no-print-directory uninstall DESTDIR="$inst" PREFIX=/usr
left=$(find "$inst/usr" -type f | wc -l)
[ "$status" -eq 0 ] && [ "$left" -eq 0 ] && ok "uninstall: nothing left behind" ||
    bad "uninstall: nothing left behind" "exit $status, $left files left" "$(find "$inst/usr" -type f | head -5)"
rm -rf "$inst"

# make and make run build two files at a time, or as many as -j says
run "make: two compiles at a time" env -u MAKEFLAGS -u MFLAGS make --no-print-directory -n all BUILD="$bindir"
if [ "$status" -eq 0 ] && grep -q -- '-j2 bin$' "$out" &&
    ! env -u MAKEFLAGS -u MFLAGS make --no-print-directory -n -j3 all BUILD="$bindir" | grep -q -- '-j2 bin$'
then ok "make: two compiles at a time, unless -j says otherwise"
else bad "make: two compiles at a time, unless -j says otherwise" "exit $status" "$(grep ' bin$' "$out")"; fi

# the page itself
run "man page: no warnings" man --warnings -l data/kvscope.1
[ "$status" -eq 0 ] && [ ! -s "$err" ] && ok "man page: no warnings" ||
    bad "man page: no warnings" "exit $status" "$(head -c 400 "$err")"
run "man page: lexgrog reads its NAME" lexgrog data/kvscope.1
[ "$status" -eq 0 ] && grep -q 'kvscope - ' "$out" && ok "man page: lexgrog reads its NAME" ||
    bad "man page: lexgrog reads its NAME" "exit $status" "$(head -c 300 "$out")"
missing=""
for c in view run example calc dump lesson export train tokenize eval serve bench plot; do
    for opt in $("$KV" "$c" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
        roff=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
        grep -q -- "$roff" data/kvscope.1 || missing="$missing $c:$opt"
    done
done
[ -z "$missing" ] && ok "man page: every option of every --help is described" ||
    bad "man page: every option of every --help is described" "missing:$missing"

# completion: subcommands, then the options of the one typed
run "completion" env PATH="$bindir:$PATH" bash -c '
    . data/kvscope.bash-completion
    COMP_WORDS=(kvscope r); COMP_CWORD=1; _kvscope; echo "1: ${COMPREPLY[*]}"
    COMP_WORDS=(kvscope run --ca); COMP_CWORD=2; _kvscope; echo "2: ${COMPREPLY[*]}"
    COMP_WORDS=(kvscope run --model ti); COMP_CWORD=3; _kvscope; echo "3: ${COMPREPLY[*]}"'
[ "$status" -eq 0 ] && grep -q '^1: run$' "$out" && grep -q '^2: --cache$' "$out" && grep -q '^3: tiny$' "$out" &&
    ok "completion: subcommands, their options, model names" ||
    bad "completion: subcommands, their options, model names" "exit $status" "$(cat "$out")"
