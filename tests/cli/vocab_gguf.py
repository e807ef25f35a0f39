#!/usr/bin/env python3
"""vocab_gguf.py OUT: a GGUF file of a 'gpt2' vocabulary alone (no tensors),
laid out otherwise than kvscope's exports: the 256 byte tokens in reverse
order, then four merges (" t", "he", " the", "'s") and a control token
<|endoftext|>. For test_tokenize.sh: " the it's" is 258 223 150 139 259."""
import struct, sys
def b2u():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]; n = 0
    for b in range(256):
        if b not in bs: bs.append(b); cs.append(256 + n); n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}
A = b2u()
w = lambda s: ''.join(A[b] for b in s.encode())
toks = [A[b] for b in range(255, -1, -1)]  # bytes in reverse: not kvscope's layout
merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("'", "s")]
for a, b in merges: toks.append(a + b)
toks.append("<|endoftext|>")
types = [1] * (len(toks) - 1) + [3]
def s(x): x = x.encode(); return struct.pack('<Q', len(x)) + x
kv = [("tokenizer.ggml.model", 8, s("gpt2")), ("tokenizer.ggml.pre", 8, s("gpt-2")),
      ("tokenizer.ggml.tokens", 9, struct.pack('<IQ', 8, len(toks)) + b''.join(s(t) for t in toks)),
      ("tokenizer.ggml.token_type", 9, struct.pack('<IQ', 5, len(types)) + b''.join(struct.pack('<i', t) for t in types)),
      ("tokenizer.ggml.merges", 9, struct.pack('<IQ', 8, len(merges)) + b''.join(s(a + ' ' + b) for a, b in merges))]
out = b'GGUF' + struct.pack('<IQQ', 3, 0, len(kv)) + b''.join(s(k) + struct.pack('<I', t) + v for k, t, v in kv)
out += b'\0' * (-len(out) % 32)
open(sys.argv[1], 'wb').write(out)
