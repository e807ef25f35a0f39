#!/usr/bin/env python3
"""numpy_forward.py DIR: check a `kvscope dump` directory independently.

Recomputes the model from the dumped weights alone, in float64 NumPy, with
no cache: the whole sequence (prompt plus the generated tokens that were fed
back) in one causal pass. It follows the conventions written in
manifest.json, not the engine's code, and compares:

  * tokens: greedy argmax of its logits at every step = tokens.npy
  * logits: logits.npy within LOGIT_TOL, relative to max(1, |logit|)
  * cache:  cache.layerL.k.npy (after RoPE) and .v.npy within CACHE_TOL

Prints what it compared with the largest differences; exits 1 on any
mismatch, 2 when the directory cannot be read.
"""
import json
import os
import sys

import numpy as np

LOGIT_TOL = 1e-4  # engine float32 vs float64 here, relative to max(1, |value|)
CACHE_TOL = 1e-5


def load(d, name):
    return np.load(os.path.join(d, name))


def rmsnorm(x, gain, eps):
    """x: [T, d] -> x / sqrt(mean(x^2) + eps) * gain."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def rope(x, theta):
    """x: [T, H, hd]; position p = row index. Pair (2i, 2i+1) turns by p * theta^(-2i/hd)."""
    T, _, hd = x.shape
    i = np.arange(hd // 2, dtype=np.float64)
    freq = theta ** (-2.0 * i / hd)                      # [hd/2]
    ang = np.arange(T, dtype=np.float64)[:, None] * freq  # [T, hd/2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def forward(W, cfg, seq):
    """seq: [T] token ids. Returns logits [T, vocab] and per layer (k, v) [T, n_kv, hd]."""
    d, H, Hkv, hd = cfg["d_model"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    eps, theta, window = cfg["norm_eps"], cfg["rope_theta"], cfg["sliding_window"]
    T = len(seq)
    x = W["embed"][seq]                                   # [T, d]
    pos = np.arange(T)
    mask = pos[None, :] <= pos[:, None]                   # causal: key j visible to query i when j <= i
    if window:
        mask &= pos[None, :] > pos[:, None] - window      # Mistral-style window of `window` positions
    kv = []
    for l in range(cfg["n_layers"]):
        L = W["layers"][0 if cfg["shared_layers"] else l]
        h = rmsnorm(x, L["attn_norm"], eps)
        q = rope((h @ L["wq"].T).reshape(T, H, hd), theta)
        k = rope((h @ L["wk"].T).reshape(T, Hkv, hd), theta)
        v = (h @ L["wv"].T).reshape(T, Hkv, hd)
        kv.append((k, v))
        att = np.empty((T, H, hd))
        for qh in range(H):
            kh = qh * Hkv // H                            # GQA: the KV head this query head reads
            s = (q[:, qh, :] @ k[:, kh, :].T) / np.sqrt(hd)   # [T, T]
            s = np.where(mask, s, -np.inf)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            att[:, qh, :] = p @ v[:, kh, :]
        x = x + att.reshape(T, H * hd) @ L["wo"].T
        h = rmsnorm(x, L["ffn_norm"], eps)
        g, u = h @ L["w_gate"].T, h @ L["w_up"].T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ L["w_down"].T
    logits = rmsnorm(x, W["final_norm"], eps) @ W["unembed"].T
    return logits, kv


def rel_diff(a, b):
    """Largest |a - b| / max(1, |b|), and largest |a - b|."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size == 0:
        return 0.0, 0.0
    diff = np.abs(a - b)
    return float(np.max(diff / np.maximum(1.0, np.abs(b)))), float(np.max(diff))


def main(argv):
    if len(argv) != 2:
        print("usage: numpy_forward.py DIR   (a directory written by `kvscope dump`)", file=sys.stderr)
        return 2
    d = argv[1]
    try:
        man = json.load(open(os.path.join(d, "manifest.json")))
        cfg = man["config"]
        if cfg["attention"] != "gqa":
            print("numpy_forward: only GQA models are modelled here", file=sys.stderr)
            return 2
        n_stored = 1 if cfg["shared_layers"] else cfg["n_layers"]
        names = ["attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down"]
        W = {
            "embed": load(d, "embed.npy").astype(np.float64),
            "final_norm": load(d, "final_norm.npy").astype(np.float64),
            "unembed": load(d, "unembed.npy").astype(np.float64),
            "layers": [{n: load(d, "layer%d.%s.npy" % (l, n)).astype(np.float64) for n in names}
                       for l in range(n_stored)],
        }
        prompt, tokens, logits = load(d, "prompt.npy"), load(d, "tokens.npy"), load(d, "logits.npy")
        caches = [(load(d, "cache.layer%d.k.npy" % l), load(d, "cache.layer%d.v.npy" % l))
                  for l in range(cfg["n_layers"])]
    except (OSError, KeyError, ValueError) as exc:
        print("numpy_forward: cannot read dump %s: %s" % (d, exc), file=sys.stderr)
        return 2

    B, P = prompt.shape
    N = tokens.shape[1]
    print("numpy_forward: model %s (%s), %d layer(s)%s, %d heads / %d KV heads, head_dim %d; "
          "%d sequence(s), prompt %d, %d tokens"
          % (cfg["name"], man["weights"]["source"], cfg["n_layers"],
             " (shared)" if cfg["shared_layers"] else "", cfg["n_heads"], cfg["n_kv_heads"],
             cfg["head_dim"], B, P, N))
    if prompt.dtype != np.int32 or tokens.dtype != np.int32 or logits.dtype != np.float32:
        print("  FAIL dtypes: prompt %s, tokens %s, logits %s" % (prompt.dtype, tokens.dtype, logits.dtype))
        return 1
    if logits.shape != (N, B, cfg["vocab"]):
        print("  FAIL logits.npy shape %s, expected %s" % (logits.shape, (N, B, cfg["vocab"])))
        return 1

    failed = 0
    worst = {"logit_rel": 0.0, "logit_abs": 0.0, "k": 0.0, "v": 0.0}
    for b in range(B):
        seq = np.concatenate([prompt[b], tokens[b, :-1]])     # the last token is never fed back
        lg, kv = forward(W, cfg, seq)
        mine = lg[P - 1:]                                      # step s: logits at position P-1+s
        picked = np.argmax(mine, axis=1)
        if not np.array_equal(picked, tokens[b]):
            s = int(np.argmax(picked != tokens[b]))
            print("  FAIL seq %d tokens: numpy %s, engine %s (first difference at step %d)"
                  % (b, picked.tolist(), tokens[b].tolist(), s))
            failed += 1
        r, a = rel_diff(logits[:, b, :], mine)
        worst["logit_rel"], worst["logit_abs"] = max(worst["logit_rel"], r), max(worst["logit_abs"], a)
        if r > LOGIT_TOL:
            s, i = np.unravel_index(np.argmax(np.abs(logits[:, b, :] - mine)), mine.shape)
            print("  FAIL seq %d logits: max rel diff %.3g > %g (step %d, token %d: engine %.9g, numpy %.9g)"
                  % (b, r, LOGIT_TOL, s, i, logits[s, b, i], mine[s, i]))
            failed += 1
        for l, (k, v) in enumerate(kv):
            ck, cv = caches[l]
            want = (B, cfg["n_kv_heads"], len(seq), cfg["head_dim"])
            if ck.shape != want or cv.shape != want:
                print("  FAIL layer %d cache shape %s / %s, expected %s" % (l, ck.shape, cv.shape, want))
                failed += 1
                continue
            for what, eng, ref in (("k", ck[b], k.transpose(1, 0, 2)), ("v", cv[b], v.transpose(1, 0, 2))):
                r, _ = rel_diff(eng, ref)
                worst[what] = max(worst[what], r)
                if r > CACHE_TOL:
                    h, p, i = np.unravel_index(np.argmax(np.abs(eng - ref)), ref.shape)
                    print("  FAIL seq %d layer %d cache %s: max rel diff %.3g > %g "
                          "(KV head %d, position %d, dim %d: engine %.9g, numpy %.9g)"
                          % (b, l, what.upper(), r, CACHE_TOL, h, p, i, eng[h, p, i], ref[h, p, i]))
                    failed += 1

    print("  tokens: %d x %d greedy choices %s" % (B, N, "match" if not failed else "checked"))
    print("  logits: %d x %d x %d, max rel diff %.3g (abs %.3g), tolerance %g"
          % (N, B, cfg["vocab"], worst["logit_rel"], worst["logit_abs"], LOGIT_TOL))
    print("  cache:  %d layer(s) x %d seq x %d KV heads x %d positions x %d; "
          "K (after RoPE) max rel diff %.3g, V %.3g, tolerance %g"
          % (cfg["n_layers"], B, cfg["n_kv_heads"], P + N - 1, cfg["head_dim"], worst["k"], worst["v"],
             CACHE_TOL))
    print("numpy_forward: %s" % ("all match" if not failed else "%d mismatch(es)" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
