#!/usr/bin/env python3
"""spm_gguf.py IN OUT MODEL: IN (a GGUF `kvscope export` wrote, alignment 32)
with its tokenizer replaced, into OUT, for test_gguf.sh.

MODEL "llama": a SentencePiece-style vocabulary (tokenizer.ggml.tokens,
scores, token_type): <unk>, <s>, </s>, the 256 byte tokens <0xXX>, a few
words and letters, the rest unused, as many tokens as IN's vocabulary.
"gpt2": those tokens and one merge: a vocabulary kvscope reads only in
byte order, which these are not. Any other MODEL: only
tokenizer.ggml.model and the tokens, which kvscope names and does not read.

The metadata is written again without IN's tokenizer keys, with the new
ones and a string padding it by a whole number of alignments, so every
offset after it stays valid."""
import struct
import sys

ALIGN = 32
STRING, ARRAY, I32, F32 = 8, 9, 5, 6


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv_str(key, value):
    return s(key) + struct.pack("<I", STRING) + s(value)


def kv_array(key, elem, items):
    out = s(key) + struct.pack("<IIQ", ARRAY, elem, len(items))
    for it in items:
        out += s(it) if elem == STRING else struct.pack("<i" if elem == I32 else "<f", it)
    return out


def vocab(n):
    toks = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    toks += [("<0x%02X>" % b, 0.0, 6) for b in range(256)]
    # every piece reachable by joining two others: "In the beginning" is 3 tokens
    words = [("In", -1.0), ("\u2581In", -1.1), ("th", -1.2), ("the", -1.3), ("\u2581the", -1.4), ("in", -0.5),
             ("gin", -0.6), ("ing", -0.7), ("ning", -0.8), ("be", -1.5), ("begin", -0.9), ("beginning", -1.6),
             ("\u2581beginning", -1.7), ("\u2581", -2.0)]
    toks += [(w, sc, 1) for w, sc in words]
    toks += [(c, -10.0, 1) for c in "abcdefghijklmnopqrstuvwxyz"]
    if len(toks) > n:
        sys.exit("spm_gguf.py: the vocabulary needs at least %d tokens" % len(toks))
    toks += [("<unused%d>" % i, 0.0, 5) for i in range(n - len(toks))]
    return toks


def skip_value(data, pos, vtype):
    """The position after a value of vtype at pos."""
    if vtype == STRING:
        return pos + 8 + struct.unpack_from("<Q", data, pos)[0]
    if vtype == ARRAY:
        elem, n = struct.unpack_from("<IQ", data, pos)
        pos += 12
        for _ in range(n):
            pos = skip_value(data, pos, elem)
        return pos
    return pos + {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}[vtype]


def main():
    src, dst, model = sys.argv[1:4]
    data = open(src, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF"
    n = None
    kept, dropped = [], 0
    pos = 24  # keep every entry but the tokenizer's; llama.vocab_size is the token count
    for _ in range(n_kv):
        start = pos
        klen = struct.unpack_from("<Q", data, pos)[0]
        key = data[pos + 8:pos + 8 + klen].decode()
        pos += 8 + klen
        vtype = struct.unpack_from("<I", data, pos)[0]
        if key == "llama.vocab_size":
            n = struct.unpack_from("<I", data, pos + 4)[0]
        pos = skip_value(data, pos + 4, vtype)
        if key.startswith("tokenizer."):
            dropped += pos - start
        else:
            kept.append(data[start:pos])
    assert n, "no llama.vocab_size"
    toks = vocab(n)
    add = [kv_str("tokenizer.ggml.model", model), kv_array("tokenizer.ggml.tokens", STRING, [t[0] for t in toks])]
    if model == "llama":
        add += [kv_array("tokenizer.ggml.scores", F32, [t[1] for t in toks]),
                kv_array("tokenizer.ggml.token_type", I32, [t[2] for t in toks])]
    if model == "gpt2":  # merges it needs, though these tokens are not byte-ordered
        add += [kv_array("tokenizer.ggml.merges", STRING, ["t h"])]
    body = b"".join(kept + add)
    # the data section moves by a whole number of alignments: offsets stay valid
    pad_base = len(body) + len(s("test.pad")) + 4 + 8 - (pos - 24)
    body += kv_str("test.pad", "x" * ((-pad_base) % ALIGN))
    assert (len(body) - (pos - 24)) % ALIGN == 0
    head = struct.pack("<4sIQQ", magic, version, n_tensors, len(kept) + len(add) + 1)
    open(dst, "wb").write(head + body + data[pos:])


main()
