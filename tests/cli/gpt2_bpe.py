#!/usr/bin/env python3
"""gpt2_bpe.py GGUF TEXT: encode the file TEXT with the 'gpt2' vocabulary a
GGUF carries, the way llama.cpp reads one, and print the ids, one a line.

Written apart from kvscope, for test_gguf.sh: it reads the GGUF's metadata
itself, splits the text with the gpt-2 pre-tokenizer's pattern (for ASCII
text: letters, digits and other marks as runs, each with the one space
before it, contractions apart, whitespace runs), maps each byte to GPT-2's
byte alphabet and joins the adjacent pair of lowest merge rank until none
is left."""
import re
import struct
import sys

STRING, ARRAY = 8, 9
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def read_metadata(path):
    data = open(path, "rb").read()
    magic, _version, _n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF", "not a GGUF file"
    pos = 24

    def string():
        nonlocal pos
        n = struct.unpack_from("<Q", data, pos)[0]
        s = data[pos + 8:pos + 8 + n].decode("utf-8")
        pos += 8 + n
        return s

    def value(vtype):
        nonlocal pos
        if vtype == STRING:
            return string()
        if vtype == ARRAY:
            elem, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            return [value(elem) for _ in range(n)]
        size = SIZES[vtype]
        raw = data[pos:pos + size]
        pos += size
        return raw

    meta = {}
    for _ in range(n_kv):
        key = string()
        vtype = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        meta[key] = value(vtype)
    return meta


def byte_alphabet():
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
    rest for U+0100 onwards in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


PATTERN = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")


def main():
    meta = read_metadata(sys.argv[1])
    assert meta["tokenizer.ggml.model"] == "gpt2"
    tokens = meta["tokenizer.ggml.tokens"]
    ids = {t: i for i, t in enumerate(tokens)}
    rank = {}
    for r, m in enumerate(meta["tokenizer.ggml.merges"]):
        a, b = m.split(" ", 1)
        rank.setdefault((a, b), r)
    alphabet = byte_alphabet()
    text = open(sys.argv[2], "rb").read().decode("ascii")
    out = []
    for word in PATTERN.findall(text):
        sym = [alphabet[b] for b in word.encode()]
        while len(sym) > 1:
            best = min(range(len(sym) - 1), key=lambda i: (rank.get((sym[i], sym[i + 1]), 1 << 30), i))
            if (sym[best], sym[best + 1]) not in rank:
                break
            sym[best:best + 2] = [sym[best] + sym[best + 1]]
        out += [ids[s] for s in sym]
    print("\n".join(map(str, out)))


main()
