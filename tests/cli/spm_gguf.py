#!/usr/bin/env python3
"""spm_gguf.py IN OUT MODEL: IN (a GGUF `kvscope export` wrote, alignment 32)
with a tokenizer added, into OUT, for test_gguf.sh.

MODEL "llama": a SentencePiece-style vocabulary (tokenizer.ggml.tokens,
scores, token_type): <unk>, <s>, </s>, the 256 byte tokens <0xXX>, a few
words and letters, the rest unused, as many tokens as IN's vocabulary.
Any other MODEL: only tokenizer.ggml.model and the tokens, which kvscope
names and does not read.

The new metadata goes right after the header, padded (a string value) to a
multiple of the alignment, so every offset after it stays valid."""
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


def main():
    src, dst, model = sys.argv[1:4]
    data = open(src, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF"
    n = None
    pos = 24  # find llama.vocab_size or the embedding's rows: the token count
    for _ in range(n_kv):
        klen = struct.unpack_from("<Q", data, pos)[0]
        key = data[pos + 8:pos + 8 + klen].decode()
        pos += 8 + klen
        vtype = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        if vtype == STRING:
            pos += 8 + struct.unpack_from("<Q", data, pos)[0]
        elif vtype in (4, 5, 6):
            if key == "llama.vocab_size":
                n = struct.unpack_from("<I", data, pos)[0]
            pos += 4
        else:
            sys.exit("spm_gguf.py: metadata of type %d is not expected in a kvscope export" % vtype)
    assert n, "no llama.vocab_size"
    toks = vocab(n)
    add = [kv_str("tokenizer.ggml.model", model), kv_array("tokenizer.ggml.tokens", STRING, [t[0] for t in toks])]
    if model == "llama":
        add += [kv_array("tokenizer.ggml.scores", F32, [t[1] for t in toks]),
                kv_array("tokenizer.ggml.token_type", I32, [t[2] for t in toks])]
    body = b"".join(add)
    pad_base = len(body) + len(s("test.pad")) + 4 + 8
    pad = (-pad_base) % ALIGN
    body += kv_str("test.pad", "x" * pad)
    assert len(body) % ALIGN == 0
    head = struct.pack("<4sIQQ", magic, version, n_tensors, n_kv + len(add) + 1)
    open(dst, "wb").write(head + body + data[24:])


main()
