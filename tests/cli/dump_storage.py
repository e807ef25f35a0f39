#!/usr/bin/env python3
"""dump_storage.py DIR [F32DIR]: check a `kvscope dump` of a cache that stores
rows in formats other than f32, from its stored bytes alone.

  * every cache_storage segment's raw file has the shape its manifest entry
    says (rows, ceil(head_dim / block_values) * block_bytes + row_extra),
    and the segments cover positions 0..len-1;
  * the raw bytes, decoded here from the formats' layouts (written out again
    from src/kernels/format.h, not from kvscope's code), equal the decoded
    f32 rows kvscope wrote in cache.layerL.k/v.npy;
  * with F32DIR (a dump of the same run through an f32 cache): layer 0's rows
    at the prompt's positions (which no attention has touched yet) are the
    f32 rows within the format's rounding bound (row formats only: per-channel
    codes have no bound relative to a row and are skipped).

Prints "dump_storage: all match" and exits 0, or a FAIL line per problem."""
import json
import sys

import numpy as np

FP4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float32)


def nibbles(words, n, bits):
    """Element i of a row of uint32 words: word i / (32 / bits), bits * (i % per)."""
    per = 32 // bits
    i = np.arange(n)
    return (words[..., i // per] >> (bits * (i % per)).astype(np.uint32)) & ((1 << bits) - 1)


def decode(raw, fmt, hd, chan=None, group=0):
    """raw: uint8 [..., rows, row_bytes] -> float32 [..., rows, hd]."""
    lead = raw.shape[:-1]
    if fmt == "f32":
        return raw.view("<f4")[..., :hd]
    if fmt == "f16":
        return raw.view("<f2")[..., :hd].astype(np.float32)
    if fmt in ("q8_0", "q4_0"):
        bb = 34 if fmt == "q8_0" else 18
        nb = raw.shape[-1] // bb
        blocks = raw.reshape(lead + (nb, bb))
        d = blocks[..., :2].copy().view("<f2").astype(np.float32)  # [..., nb, 1]
        if fmt == "q8_0":
            q = blocks[..., 2:].view(np.int8).astype(np.float32)
        else:
            qs = blocks[..., 2:]
            q = np.concatenate([qs & 15, qs >> 4], axis=-1).astype(np.float32) - 8
        return (q * d).reshape(lead + (nb * 32,))[..., :hd]
    if fmt in ("int4", "fp4", "u4", "u2"):
        bits = 2 if fmt == "u2" else 4
        nw = -(-hd // (32 // bits))
        words = raw[..., : 4 * nw].copy().view("<u4")
        code = nibbles(words, hd, bits)
        if fmt in ("u4", "u2"):
            v = code.astype(np.float32)
            # per-channel: key = scale * code + min, one (scale, min) per group of rows
            c = chan.astype(np.float32)  # [..., groups, 2 * hd]
            c = np.repeat(c, group, axis=-2)
            return v * c[..., :hd] + c[..., hd:]
        s = raw[..., 4 * nw : 4 * nw + 2].copy().view("<f2").astype(np.float32)
        if fmt == "int4":
            q = code.astype(np.int32)
            q = np.where(q >= 8, q - 16, q).astype(np.float32)
        else:
            q = FP4[code & 7] * np.where(code & 8, -1, 1)
        return q * s
    raise ValueError("unknown format " + fmt)


# The most one value may move, as a share of its row's largest magnitude
# (over a block of up to 32 values): half a step of 1/127, 1/8 or 1/7 of the
# absmax, a whole step for q4_0 (its scale is the signed max / -8, so the
# other side can reach 8/8 of a step), fp4's widest gap (2 of 6), and the
# fp16 scale's own rounding. f16 itself: 2^-11 relative.
BOUND = {"f32": 0, "f16": 2.0 ** -10, "q8_0": 0.5 / 127 + 2e-3, "q4_0": 1 / 8 + 2e-3,
         "int4": 1 / 7 + 2e-3, "fp4": 1 / 6 + 2e-3}


def main():
    d = sys.argv[1]
    m = json.load(open(d + "/manifest.json"))
    hd = m["config"]["head_dim"]
    length = m["run"]["cache_len"]
    plen = m["run"]["prompt_len"]
    ref = sys.argv[2] if len(sys.argv) > 2 else None
    fails = 0
    checked = 0
    for layer in m["cache_storage"]:
        l = layer["layer"]
        for side in ("k", "v"):
            dec = np.load("%s/cache.layer%d.%s.npy" % (d, l, side))
            want_pos = 0
            for seg in layer[side]:
                p0, p1 = seg["positions"]
                raw = np.load(d + "/" + seg["file"])
                row_bytes = -(-hd // seg["block_values"]) * seg["block_bytes"] + seg["row_extra"]
                if p0 != want_pos or seg["row_bytes"] != row_bytes:
                    print("  FAIL layer %d %s segment %s: starts at %d (want %d), row_bytes %d (want %d)"
                          % (l, side, seg["file"], p0, want_pos, seg["row_bytes"], row_bytes))
                    fails += 1
                want_pos = p1
                if seg["format"] == "f32" and seg["file"] == "cache.layer%d.%s.npy" % (l, side):
                    continue  # the decoded file is the storage
                want_shape = dec.shape[:2] + (p1 - p0, row_bytes)
                if raw.dtype != np.uint8 or raw.shape != want_shape:
                    print("  FAIL %s: %s %s, want uint8 %s" % (seg["file"], raw.dtype, raw.shape, want_shape))
                    fails += 1
                    continue
                chan = np.load(d + "/" + seg["chan_file"]) if "chan_file" in seg else None
                got = decode(raw, seg["format"], hd, chan, seg.get("group_rows", 0))
                diff = np.max(np.abs(got - dec[:, :, p0:p1, :]))
                if not diff <= 1e-6 * max(1.0, float(np.max(np.abs(got)))):
                    print("  FAIL layer %d %s %s: raw bytes decode %.3g away from the decoded rows"
                          % (l, side, seg["format"], diff))
                    fails += 1
                checked += 1
            if want_pos != length:
                print("  FAIL layer %d %s: segments end at %d, cache_len %d" % (l, side, want_pos, length))
                fails += 1
    if ref:
        for side in ("k", "v"):
            exact = np.load("%s/cache.layer0.%s.npy" % (ref, side))[:, :, :plen, :]
            got = np.load("%s/cache.layer0.%s.npy" % (d, side))[:, :, :plen, :]
            # each position's bound is its segment's format's
            segs = m["cache_storage"][0][side]
            # (per-channel codes have no bound relative to a row: those positions are skipped)
            share = np.array([[BOUND.get(s["format"], np.inf) for s in segs
                               if s["positions"][0] <= p < s["positions"][1]][0]
                              for p in range(plen)], dtype=np.float32)[:, None]
            fmts = ",".join(s["format"] for s in segs if s["positions"][0] < plen)
            scale = np.max(np.abs(exact), axis=-1, keepdims=True)
            rel = np.abs(got - exact) / np.maximum(scale, 1e-30)
            over = rel > share + 1e-6
            if over.any():
                print("  FAIL layer 0 %s (%s): %d values beyond the bound; worst %.3g of the row's absmax"
                      % (side, fmts, int(over.sum()), float(np.max(rel))))
                fails += 1
            held = np.isfinite(share[:, 0])
            if held.any():
                print("  layer 0 %s (%s): prompt rows within %.4f of the f32 run's (bound %.4f of the row's absmax)"
                      % (side, fmts, float(np.max(rel[:, :, held])), float(np.max(share[held]))))
    if checked == 0:
        print("  FAIL no raw segment to check")
        fails += 1
    if fails:
        sys.exit(1)
    print("dump_storage: all match (%d raw segments decoded)" % checked)


if __name__ == "__main__":
    main()
