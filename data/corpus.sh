#!/bin/sh
# corpus.sh OUTDIR: the King James Bible as kvscope's training text.
# `make corpus` runs it (after installing bible-kjv and bible-kjv-text).
# The text comes from the bible program, one verse per line; the verse
# numbers are dropped, each chapter keeps its heading ("Genesis 1") and ends
# with a blank line. Whole books are held out for validation (VALID below),
# both testaments, narrative, wisdom, gospel and letter alike; the rest is
# the training text. The SHA-256 of both files is checked against
# data/corpus.sha256, so every machine trains on the same bytes.
set -eu
out=${1:?usage: corpus.sh OUTDIR}
here=$(dirname "$0")
VALID="Ruth|Ecclesiastes|Mark|Hebrews"
command -v bible >/dev/null 2>&1 || {
    echo "kvscope: the bible program is missing (Debian: bible-kjv; make corpus installs it)" >&2
    exit 1
}
mkdir -p "$out"
tmp_train="$out/.kjv-train.txt.tmp" tmp_valid="$out/.kjv-valid.txt.tmp"
trap 'rm -f "$tmp_train" "$tmp_valid"' EXIT
bible -l 1000000 "Gen1:1-Rev22:21" | awk -v valid="^($VALID) [0-9]+\$" -v train="$tmp_train" -v vfile="$tmp_valid" '
    /^ *$/ { next }
    /^ +[0-9]+ / {                       # a verse (indented): drop its number
        sub(/^ +[0-9]+ /, ""); print > dest; next }
    {                                    # a chapter heading: "1 Samuel 3", "Song of Solomon 2"
        if (started) print "" > dest
        dest = ($0 ~ valid) ? vfile : train
        started = 1
        print > dest }
    END { print "" > train; print "" > vfile }'
for f in kjv-train.txt kjv-valid.txt; do
    tmp="$out/.$f.tmp"
    want=$(awk -v f="$f" '$2 == f { print $1 }' "$here/corpus.sha256")
    got=$(sha256sum "$tmp" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        echo "kvscope: $f: SHA-256 $got, data/corpus.sha256 expects $want (another bible-kjv version?)" >&2
        exit 1
    fi
    mv "$tmp" "$out/$f"
done
echo "corpus: $out/kjv-train.txt ($(wc -c <"$out/kjv-train.txt") bytes), $out/kjv-valid.txt ($(wc -c <"$out/kjv-valid.txt") bytes)"
