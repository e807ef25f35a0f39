#!/bin/sh
# layers.sh: the layer rule of DESIGN.md and README's layout, checked on the
# includes: each room of src/ may include only itself and the rooms listed
# for it (the rooms below it). Prints each breach and fails if there is one.
cd "$(dirname "$0")/.." || exit 1
below() {
    case $1 in
    util) echo "util" ;;
    stats) echo "stats util" ;;
    kernels) echo "kernels stats util" ;;
    text) echo "text stats util" ;;
    ckpt) echo "ckpt kernels stats util" ;;
    kv) echo "kv kernels stats util" ;;
    model) echo "model kv ckpt text kernels stats util" ;;
    train) echo "train model kv ckpt text kernels stats util" ;;
    sim) echo "sim model kv ckpt text kernels stats util" ;;
    report) echo "report sim model kv ckpt text kernels stats util" ;;
    plot) echo "plot sim train model kv ckpt text kernels stats util" ;;
    course) echo "course util" ;;
    ui) echo "ui sim model kv ckpt text kernels stats util" ;;
    app) echo "app ui report plot course sim train model kv ckpt text kernels stats util" ;;
    *) echo "" ;;
    esac
}
bad=0
for dir in src/*/; do
    room=$(basename "$dir")
    allowed=$(below "$room")
    if [ -z "$allowed" ]; then
        echo "layers: src/$room is not a known room (add it to tests/layers.sh and README's layout)"
        bad=1
        continue
    fi
    for f in "$dir"*.c "$dir"*.h; do
        [ -e "$f" ] || continue
        for inc in $(sed -n 's/^#include "\([a-z0-9_]*\)\/.*/\1/p' "$f" | sort -u); do
            case " $allowed " in
            *" $inc "*) ;;
            *) echo "layers: $f includes $inc/, which src/$room may not use"; bad=1 ;;
            esac
        done
    done
done
[ "$bad" -eq 0 ] && echo "layers: every include points down"
exit "$bad"
