#!/bin/sh
# peer.sh BUILD BIN LIB [--if-reachable]: `make peer`. llama.cpp as an
# independent peer of kvscope on kvscope's own GGUF exports: the same ids
# for the same text, the same logits for the same ids, llama.cpp's view of
# the special tokens. llama.cpp's prebuilt CPU library comes from the npm
# package @node-llama-cpp/linux-x64 and its headers (and its tokenizer
# tests) from the git bundle inside node-llama-cpp, both pinned and checked
# against their sha512; nothing of them is committed, all of it lives in
# BUILD/peer (downloaded once). With --if-reachable (make test) a machine
# that cannot run it (not x86_64, npm's registry out of reach) prints a
# SKIP line and succeeds; otherwise that is a failure. With --speed (make
# peer-speed) it times a decode step in both programs instead
# (tests/peer/speed.sh).
set -u
BUILD=$1 BIN=$2 LIB=$3 MODE=${4:-}
VER=3.22.1 RELEASE=v0.5.0
BIN_PKG=@node-llama-cpp/linux-x64 SRC_PKG=node-llama-cpp
BIN_TGZ=node-llama-cpp-linux-x64-$VER.tgz SRC_TGZ=node-llama-cpp-$VER.tgz
# their sha512 (the registry's integrity strings, in hex)
BIN_SHA=e6e0820cda9608d7da026f1a47f533c5ba381c1a4a80d17dd640873dea4a86032057638099ab6879f6ce94c8a1b2a0a21f639ddf913f7941d00856df44126e3a
SRC_SHA=6e5b488a9b9699cd76dc7eed30880318a4ac4ab866865418795502e3c5d38d55bb5c624988927209d95333343f2e25a83e4183a5c2f816f883a60c3ba9f4e20f
P=$BUILD/peer
T0=$(date +%s)

skip() {
    if [ "$MODE" = --if-reachable ]; then echo "SKIP peer: $1 (make peer compares kvscope with llama.cpp)"; exit 0; fi
    echo "peer: $1" >&2; exit 1
}
die() { echo "peer: $1" >&2; exit 1; }

[ "$(uname -m)" = x86_64 ] || skip "llama.cpp's prebuilt library here is for x86_64, this machine is $(uname -m)"
sha() { sha512sum "$1" 2>/dev/null | cut -d' ' -f1; }

# 1. the two packages, once: npm pack fetches them (npm checks them against
# the registry's integrity); kept only when they match the pinned sha512
mkdir -p "$P/dl"
if [ "$(sha "$P/dl/$BIN_TGZ" 2>/dev/null)" != "$BIN_SHA" ] || [ "$(sha "$P/dl/$SRC_TGZ" 2>/dev/null)" != "$SRC_SHA" ]; then
    command -v npm >/dev/null || skip "npm is not installed"
    timeout 30 npm view "$SRC_PKG@$VER" version >/dev/null 2>&1 || skip "npm cannot reach its registry"
    (cd "$P/dl" && timeout 300 npm pack --silent "$BIN_PKG@$VER" "$SRC_PKG@$VER" >/dev/null) ||
        die "npm pack $BIN_PKG@$VER $SRC_PKG@$VER failed"
    [ "$(sha "$P/dl/$BIN_TGZ")" = "$BIN_SHA" ] || die "$BIN_TGZ: sha512 differs from the pinned one"
    [ "$(sha "$P/dl/$SRC_TGZ")" = "$SRC_SHA" ] || die "$SRC_TGZ: sha512 differs from the pinned one"
    rm -rf "$P/x" "$P/src"
fi
LIBDIR=$P/x/package/bins/linux-x64
if [ ! -f "$LIBDIR/libllama.$RELEASE.so" ]; then
    mkdir -p "$P/x" && tar xzf "$P/dl/$BIN_TGZ" -C "$P/x" || die "cannot unpack $BIN_TGZ"
    tar xzf "$P/dl/$SRC_TGZ" -C "$P/x" package/llama/gitRelease.bundle || die "cannot unpack $SRC_TGZ"
fi
# 2. the release's headers and tokenizer tests from the source bundle
VOCABS="gpt-2 llama-bpe"
if [ ! -f "$P/src/include/llama.h" ]; then
    rm -rf "$P/src"
    git clone -q --no-checkout "$P/x/package/llama/gitRelease.bundle" "$P/src" 2>/dev/null || die "cannot clone the source bundle"
    files="include ggml/include"
    for v in $VOCABS; do files="$files models/ggml-vocab-$v.gguf models/ggml-vocab-$v.gguf.inp models/ggml-vocab-$v.gguf.out"; done
    # shellcheck disable=SC2086
    git -C "$P/src" checkout -q HEAD -- $files || die "the source bundle lacks $files"
fi
# 3. the driver: llama.cpp's library, and kvscope's library linked into one
# object whose symbols stay hidden (both define gguf_* functions)
CF="-std=c11 -O2 -g -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE"
cc $CF -Isrc -c tests/peer/kv_side.c -o "$P/kv_side.o" &&
    ld -r -o "$P/kv_part.o" "$P/kv_side.o" "$LIB" &&
    objcopy -G peer_kvscope_greedy "$P/kv_part.o" &&
    cc $CF -I"$P/src/include" -I"$P/src/ggml/include" -o "$P/peer" tests/peer/peer.c "$P/kv_part.o" \
        -L"$LIBDIR" -l:libllama.$RELEASE.so -l:libggml.$RELEASE.so -lggml-base -Wl,-rpath,"$(cd "$LIBDIR" && pwd)" \
        ${PEER_LDLIBS:-} -lm -pthread || die "cannot build the driver"
export PEER_LIB="$LIBDIR"
# --speed: the decode-speed table (make peer-speed) instead of the comparisons
if [ "$MODE" = --speed ]; then . tests/peer/speed.sh; exit 0; fi
D=$P/run
rm -rf "$D" && mkdir -p "$D"

# 4. kvscope's exports (kjv-base: every sequence starts with a fixed first
# token, add_bos)
MODELS="kjv-tiny kjv-small kjv-base"
for m in $MODELS; do for t in f32 f16 q8_0 q4_0; do
    "$BIN" export --weights "data/weights/$m.kvw" --type $t --gguf "$D/$m.$t.gguf" --quiet >/dev/null ||
        die "kvscope export $m $t failed"
done; done

# Targets kvscope does not meet yet: their rows print "open"
# (not "ok") and do not fail the run; every other row that misses fails it.
OPEN=""
fails=0 open=0
row() { # CHECK FILE RESULT TARGET MET
    met=$5
    if [ "$met" != ok ] && [ -n "$OPEN" ] && echo "$1" | grep -Eqx "$OPEN"; then met=open open=$((open + 1)); fi
    printf '%-26s %-15s %-60s %-12s %s\n' "$1" "$2" "$3" "$4" "$met"
    [ "$met" = ok ] || [ "$met" = open ] || fails=$((fails + 1))
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

echo "kvscope against llama.cpp $RELEASE (prebuilt CPU library of $BIN_PKG $VER)"
printf '%-26s %-15s %-60s %-12s %s\n' check file "kvscope vs llama.cpp" target met

# 5. tokens: held-out text, seeded random mixed text, edge strings
G=$D/kjv-small.f32.gguf
HELD=$BUILD/corpus/kjv-valid.txt HELD_NAME="held-out text"
if [ ! -f "$HELD" ]; then HELD=README.md HELD_NAME="README (no corpus)"; fi
"$P/peer" text 48 262144 "$D/random.txt" || die "cannot write the random text"
tok_row() { # NAME TEXTFILE
    "$BIN" tokenize --weights "$G" --format tsv - <"$2" >"$D/tok.tsv" 2>"$D/tok.err" || {
        row "tokens $1" kjv-small "kvscope refused: $(head -c 50 "$D/tok.err")" "0 differ" FAIL; return; }
    r=$("$P/peer" tok "$G" "$2" "$D/tok.tsv" 2>"$D/tok.diff") || die "peer tok failed: $(cat "$D/tok.diff")"
    d=$(field "$r" differ) rb=$(field "$r" rebuilt)
    met=ok; [ "$d" = 0 ] && [ "$rb" = same ] || met=FAIL
    row "tokens $1" kjv-small "$(field "$r" bytes) bytes, $(field "$r" ids) ids, $d differ, rebuilt $rb" "0 differ" $met
    [ "$met" = ok ] || sed 's/^/    /' "$D/tok.diff"
}
tok_row "$HELD_NAME" "$HELD"
tok_row "random mixed" "$D/random.txt"
n=0 edge_bad=0 edge_ids=0
for s in '' ' ' '   ' '\n' '\n\n\n' ' \n ' '\t\t' '\r\n' '0' '42' '1234567890' '3333 33' "a'this" "it'sweet we'rent x'veal" \
    "I'm you'll he'd they've" "don't" "' era" '  Hello\n\n  world  '; do
    printf "$s" >"$D/edge.$n.txt"
    if "$BIN" tokenize --weights "$G" --format tsv - <"$D/edge.$n.txt" >"$D/tok.tsv" 2>/dev/null &&
        r=$("$P/peer" tok "$G" "$D/edge.$n.txt" "$D/tok.tsv" 2>/dev/null) &&
        [ "$(field "$r" differ)" = 0 ] && [ "$(field "$r" rebuilt)" = same ]; then
        edge_ids=$((edge_ids + $(field "$r" ids)))
    else edge_bad=$((edge_bad + 1)); echo "    edge string $n ('$s') differs"; fi
    n=$((n + 1))
done
met=ok; [ $edge_bad = 0 ] || met=FAIL
row "tokens edge strings" kjv-small "$n strings (empty, blanks, digits, contractions), $edge_ids ids, $edge_bad differ" "0 differ" $met

# kjv-base's first token: llama.cpp adds it where its export asks for it
# (add_bos_token), kvscope's tokenizer of the export puts it first
G=$D/kjv-base.f32.gguf
"$BIN" tokenize --weights "$G" --format tsv - <"$HELD" >"$D/tok.tsv" 2>"$D/tok.err" &&
    r=$("$P/peer" tok "$G" "$HELD" "$D/tok.tsv" special 2>"$D/tok.diff") || r="refused"
d=$(field "$r" differ) rb=$(field "$r" rebuilt) first=$(sed -n 2p "$D/tok.tsv" | cut -f2)
met=ok; [ "$d" = 0 ] && [ "$rb" = same ] || met=FAIL
row "tokens, first token" kjv-base "$HELD_NAME with the first token $first: $(field "$r" ids) ids, ${d:-?} differ" "0 differ" $met
[ "$met" = ok ] || sed 's/^/    /' "$D/tok.diff"

# 6. GPT-2's and Llama 3's vocabularies: llama.cpp's own tokenizer tests
for v in $VOCABS; do
    VG=$P/src/models/ggml-vocab-$v.gguf
    r=$("$P/peer" vocab "$VG" "$VG.inp" "$D/vocab-$v") || die "peer vocab $v failed"
    cases=$(field "$r" cases) bad=0 refused=
    i=0
    while [ $i -lt "$cases" ]; do
        if "$BIN" tokenize --weights "$VG" --format tsv - <"$D/vocab-$v.$i.txt" >"$D/tok.tsv" 2>"$D/tok.err"; then
            got=$(awk -F'\t' 'NR > 1 && $1 ~ /^[0-9]+$/ { printf " %s", $2 }' "$D/tok.tsv")
            [ "$got" = "$(cat "$D/vocab-$v.$i.ids")" ] || bad=$((bad + 1))
        else bad=$((bad + 1)) refused=$(head -c 60 "$D/tok.err"); fi
        i=$((i + 1))
    done
    met=ok; [ $bad = 0 ] && [ "$(field "$r" library_vs_out_differ)" = 0 ] || met=FAIL
    row "tokens vocab $v" "ggml-vocab" "$cases cases of llama.cpp's test, $bad differ${refused:+ ($refused)}" "0 differ" $met
done

# 7. special tokens and load warnings, logits and greedy tokens. On the
# integer path one rounding of an activation to q8_0 that a last-bit
# difference of the float sums moves to the next step moves the logits by up
# to ~0.1, so where the greedy tokens part, both programs' top two logits
# there must be closer than the row's largest logit difference ("tie"):
# a near-tie the summation order decides, not a wrong token.
PROMPTS="1,2,3,4,5,6,7,8 300,301,10,500,600,700"
for m in $MODELS; do for t in f32 f16 q8_0 q4_0; do
    G=$D/$m.$t.gguf
    r=$("$P/peer" info "$G") || die "llama.cpp cannot load $m.$t"
    met=ok; [ "$(field "$r" warnings)" = 0 ] && [ "$(field "$r" eog)" = 1 ] && [ "$(field "$r" eos)" -ge 256 ] || met=FAIL
    # a model with a fixed first token: llama.cpp adds it, and it is the model's
    bos=$(sed -n 's/^bos_token *= *//p' "data/models/$m.ini") first=
    if grep -Eq '^add_bos *= *true' "data/models/$m.ini"; then
        [ "$(field "$r" add_bos)" = 1 ] && [ "$(field "$r" bos)" = "$bos" ] || met=FAIL
        first=", first token $(field "$r" bos) (add_bos $(field "$r" add_bos))"
        PR=$(for pr in $PROMPTS; do printf '%s,%s ' "$bos" "$pr"; done)
    else PR=$PROMPTS; fi
    [ $t = f32 ] && row "load, EOS" "$m" "eos $(field "$r" eos) $(field "$r" eos_piece), end of generation $(field "$r" eog)$first, $(field "$r" warnings) warnings" "0 warnings" $met
    case $t in f32) tol=1e-4 how= ;; f16) tol=1e-2 how= ;; *) tol=- how=int ;; esac
    worst=0 same=0 all=0 exact=0 ties='' untied=0
    np=0
    for pr in $PR; do
        np=$((np + 1))
        r=$("$P/peer" logits "$G" $pr 64 $how) || die "peer logits $m.$t failed"
        worst=$(awk -v a="$worst" -v b="$(field "$r" max_logit_diff)" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
        g=$(field "$r" greedy_same)
        same=$((same + ${g%/*})) all=$((all + ${g#*/})) exact=$((exact + $(field "$r" exact_steps)))
        if [ "$(field "$r" first_divergence)" != -1 ]; then
            mg=$(field "$r" margins)
            ties="$ties; prompt $np parts at step $(field "$r" first_divergence), top-2 margins ${mg%,*} and ${mg#*,}"
            [ "$(field "$r" divergence_at_tie)" = 1 ] || untied=$((untied + 1))
        fi
    done
    met=ok
    if [ $tol = - ]; then [ $untied = 0 ] || met=FAIL; target="same or tie"
    else awk -v a="$worst" -v b="$tol" 'BEGIN { exit !(a + 0 <= b + 0) }' || met=FAIL; target="<= $tol"; fi
    row "logits${how:+, integer dots}" "$m.$t" "largest |logit diff| $worst, exact steps $exact/$all, greedy tokens same $same/$all$ties" "$target" $met
done; done

echo "exact steps: steps whose logits agree within 1e-4. same or tie: greedy tokens identical, or parting first where both"
echo "  programs' top-2 margins (kvscope's, llama.cpp's) are below the row's largest logit difference: a near-tie that the"
echo "  order of the float sums decides (it moves an activation's q8_0 rounding, and the logits after it by up to ~0.1)"
echo "peer: $(($(date +%s) - T0)) s; $fails rows miss their target${OPEN:+; $open open (not yet met: $OPEN)}"
[ $fails = 0 ]
