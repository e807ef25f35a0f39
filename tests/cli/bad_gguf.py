#!/usr/bin/env python3
"""bad_gguf.py IN OUT KIND [IN OUT KIND]...: each IN (a GGUF `kvscope
export` wrote) made to lie in one way, into its OUT, for test_bad_input.sh
(one run for all: Python's start-up is the slow part).

KIND:
  short       the header's tensor count one short
  retype      the first q8_0 tensor's type set to f16 (it then runs into the next)
  offsets0    every tensor's data offset 0
  nan-weight  the first f32 tensor's element 0 a NaN
  nan-scale   the first q8_0 tensor's first block scale a NaN (f16 0x7e00)
  bos=N       tokenizer.ggml.bos_token_id set to N: an i32 in place of a
              32-bit id there, else an i32 entry added (the metadata padded
              by a whole number of alignments, as spm_gguf.py)"""
import struct
import sys

ALIGN = 32
STRING, ARRAY, I32 = 8, 9, 5
F32, F16, Q8_0 = 0, 1, 8


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


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def parse(data):
    """(n_kv, end of the metadata, [(name, type_at, offset_at)], data start,
    {key: where its value type is})."""
    magic, _, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF"
    pos = 24
    keys = {}
    for _ in range(n_kv):
        klen = struct.unpack_from("<Q", data, pos)[0]
        key = data[pos + 8:pos + 8 + klen].decode()
        pos += 8 + klen
        keys[key] = pos
        pos = skip_value(data, pos + 4, struct.unpack_from("<I", data, pos)[0])
    meta_end = pos
    infos = []
    for _ in range(n_tensors):
        nlen = struct.unpack_from("<Q", data, pos)[0]
        name = data[pos + 8:pos + 8 + nlen].decode()
        pos += 8 + nlen
        n_dims = struct.unpack_from("<I", data, pos)[0]
        pos += 4 + 8 * n_dims
        infos.append((name, pos, pos + 4))
        pos += 12
    return n_kv, meta_end, infos, pos + (-pos) % ALIGN, keys


def first_of(data, infos, ggml_type):
    for name, type_at, off_at in infos:
        if struct.unpack_from("<I", data, type_at)[0] == ggml_type:
            return name, type_at, off_at
    sys.exit("bad_gguf.py: no tensor of ggml type %d" % ggml_type)


def main():
    args = sys.argv[1:]
    if not args or len(args) % 3:
        sys.exit("usage: bad_gguf.py IN OUT KIND [IN OUT KIND]...")
    for i in range(0, len(args), 3):
        make(*args[i:i + 3])


def make(src, dst, kind):
    data = bytearray(open(src, "rb").read())
    n_kv, meta_end, infos, start, keys = parse(data)
    if kind == "short":
        struct.pack_into("<Q", data, 8, len(infos) - 1)
    elif kind == "retype":
        struct.pack_into("<I", data, first_of(data, infos, Q8_0)[1], F16)
    elif kind == "offsets0":
        for _, _, off_at in infos:
            struct.pack_into("<Q", data, off_at, 0)
    elif kind == "nan-weight":
        at = start + struct.unpack_from("<Q", data, first_of(data, infos, F32)[2])[0]
        struct.pack_into("<I", data, at, 0x7fc00000)
    elif kind == "nan-scale":
        at = start + struct.unpack_from("<Q", data, first_of(data, infos, Q8_0)[2])[0]
        struct.pack_into("<H", data, at, 0x7e00)
    elif kind.startswith("bos=") and "tokenizer.ggml.bos_token_id" in keys:  # a 32-bit id there: made an i32
        at = keys["tokenizer.ggml.bos_token_id"]
        if struct.unpack_from("<I", data, at)[0] not in (4, 5):
            sys.exit("bad_gguf.py: tokenizer.ggml.bos_token_id is not a 32-bit integer")
        struct.pack_into("<Ii", data, at, I32, int(kind[4:]))
    elif kind.startswith("bos="):
        entry = s("tokenizer.ggml.bos_token_id") + struct.pack("<Ii", I32, int(kind[4:]))
        pad_base = len(entry) + len(s("test.pad")) + 4 + 8
        entry += s("test.pad") + struct.pack("<I", STRING) + s("x" * ((-pad_base) % ALIGN))
        struct.pack_into("<Q", data, 16, n_kv + 2)
        data = data[:meta_end] + entry + data[meta_end:]
    else:
        sys.exit("bad_gguf.py: unknown kind '%s'" % kind)
    open(dst, "wb").write(data)


main()
