# test_first_token.sh: a model whose sequences start with a fixed first
# token (add_bos) keeps it when read from its weights alone (--weights
# FILE.kvw, whose header cannot say so): from the sidecar's bos_token, which
# train writes, or from the .ini the sidecar names when its shape matches;
# and its GGUF export says so (add_bos_token), so llama.cpp starts a text
# with that token too.

ft_tmp=$(mktemp -d)
ft_text='In the beginning God created'
ft_bos=$(sed -n 's/^bos_token *= *//p' "${KVSCOPE_DATA:-data}/models/kjv-base.ini")
ft_ids() { printf '%s' "$ft_text" | $KV tokenize "$@" --format tsv - 2>/dev/null | awk -F'\t' 'NR > 1 && $1 ~ /^[0-9]+$/ { printf "%s ", $2 }'; }
ft_want=$(ft_ids --model kjv-base)
case "$ft_want" in
"$ft_bos "*) ok "first token: --model kjv-base starts a text with bos_token $ft_bos" ;;
*) bad "first token: --model kjv-base starts a text with bos_token $ft_bos" "got: $ft_want" ;;
esac

# the shipped weights: their sidecar predates bos_token and names kjv-base
ft_got=$(ft_ids --weights "${KVSCOPE_DATA:-data}/weights/kjv-base.kvw")
if [ "$ft_got" = "$ft_want" ]; then ok "first token: --weights kjv-base.kvw reads as --model kjv-base"
else bad "first token: --weights kjv-base.kvw reads as --model kjv-base" "want: $ft_want" "got: $ft_got"; fi

# the export: add_bos_token true (read from the file's bytes), the same ids
$KV export --weights "${KVSCOPE_DATA:-data}/weights/kjv-base.kvw" --type q4_0 --gguf "$ft_tmp/base.gguf" --quiet \
    >/dev/null 2>&1
ft_flag=$(python3 -c 'import sys
b = open(sys.argv[1], "rb").read(1 << 22)
k = b"tokenizer.ggml.add_bos_token"
i = b.find(k) + len(k)
print("true" if b[i:i + 4] == bytes([7, 0, 0, 0]) and b[i + 4] == 1 else "false")' "$ft_tmp/base.gguf" 2>/dev/null)
ft_got=$(ft_ids --weights "$ft_tmp/base.gguf")
if [ "$ft_flag" = true ] && [ "$ft_got" = "$ft_want" ]; then
    ok "first token: kjv-base's GGUF export sets add_bos_token and reads as --model kjv-base"
else bad "first token: kjv-base's GGUF export sets add_bos_token and reads as --model kjv-base" \
    "add_bos_token: $ft_flag" "want: $ft_want" "got: $ft_got"; fi

# a sidecar naming a model of another shape gives no first token; a
# bos_token of its own gives it; one outside the vocabulary is refused
ln -s "$(cd "${KVSCOPE_DATA:-data}/weights" && pwd)/kjv-base.kvw" "$ft_tmp/other.kvw"
printf '{ "model": "kjv-small", "tokenizer": "kjv-bpe" }\n' >"$ft_tmp/other.kvw.json"
ft_got=$(ft_ids --weights "$ft_tmp/other.kvw")
case "$ft_got" in
"$ft_bos "* | "") bad "first token: a sidecar naming a model of another shape gives none" "got: $ft_got" ;;
*) ok "first token: a sidecar naming a model of another shape gives none" ;;
esac
ln -s "$(cd "${KVSCOPE_DATA:-data}/weights" && pwd)/kjv-base.kvw" "$ft_tmp/own.kvw"
printf '{ "model": "unnamed", "tokenizer": "kjv-bpe", "bos_token": %s }\n' "$ft_bos" >"$ft_tmp/own.kvw.json"
ft_got=$(ft_ids --weights "$ft_tmp/own.kvw")
if [ "$ft_got" = "$ft_want" ]; then ok "first token: the sidecar's bos_token"
else bad "first token: the sidecar's bos_token" "want: $ft_want" "got: $ft_got"; fi
printf '{ "model": "unnamed", "tokenizer": "kjv-bpe", "bos_token": 99999 }\n' >"$ft_tmp/own.kvw.json"
expect_fail "first token: a sidecar's bos_token outside the vocabulary" 2 "bos_token is not an id" \
    $KV tokenize --weights "$ft_tmp/own.kvw" "$ft_text"

# train writes bos_token for an add_bos model (2 steps of a micro one)
cat >"$ft_tmp/micro.ini" <<INI
[model]
d_model = 32
n_layers = 1
n_heads = 2
n_kv_heads = 1
head_dim = 16
ffn_dim = 64
vocab = 1025
max_seq_len = 32
tokenizer = kjv-bpe
bos_token = 1024
add_bos = true
INI
cat lessons/0*.md >"$ft_tmp/train.txt"
$KV train --model "$ft_tmp/micro.ini" --text "$ft_tmp/train.txt" --valid "$ft_tmp/train.txt" --batch 2 --steps 2 \
    --eval-windows 1 --eval-every 0 --out "$ft_tmp/micro.kvw" >/dev/null 2>&1
ft_side=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("bos_token"))' \
    "$ft_tmp/micro.kvw.json" 2>/dev/null)
ft_got=$(ft_ids --weights "$ft_tmp/micro.kvw")
case "$ft_side/$ft_got" in
"1024/1024 "*) ok "first token: train records bos_token 1024 and --weights reads it" ;;
*) bad "first token: train records bos_token 1024 and --weights reads it" "sidecar: $ft_side" "ids: $ft_got" ;;
esac
rm -rf "$ft_tmp"
