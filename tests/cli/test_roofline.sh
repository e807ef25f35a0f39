# test_roofline.sh: bandwidth, FLOPs per byte and the machine's two roofs
# (stats/roofline.h, sim/roofs.h): run's columns agree with its own counts
# (intensity = FLOPs / bytes moved, GB/s = bytes / time, shares = over the
# roofs), a pass above the DRAM roof says "from cache", the roofs come from
# KVSCOPE_ROOFS, bench's kept file or a probe (each named), and the view's
# roofline panel places prefill right of decode, q4_0 and a batch further
# right. No speed is checked: only that the figures exist, are finite and
# agree with each other.

rl_tmp=$(mktemp -d)
rl_ids=1,2,3,4,5,6,7,8,9,10,11,12

# --- run: the columns are the counts' own arithmetic ------------------------
$KV run --model tiny --prompt-ids $rl_ids --tokens 4 --compare --format tsv >"$rl_tmp/run.tsv" 2>"$err"
if python3 - "$rl_tmp/run.tsv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
assert len(rows) == 8, len(rows)
for r in rows:
    f = {k: float(v) for k, v in r.items() if k not in ("run", "phase")}
    moved = f["weight_bytes_read"] + f["kv_bytes_read"] + f["kv_bytes_written"]
    assert f["bytes_moved"] == moved, (r["step"], f["bytes_moved"], moved)
    for k in ("gb_per_s", "flop_per_byte", "dram_share", "peak_share"):
        assert math.isfinite(f[k]) and f[k] > 0, (k, f[k])
    assert abs(f["flop_per_byte"] - f["total_flops"] / moved) <= 1e-5 * f["flop_per_byte"], r
    assert abs(f["gb_per_s"] - moved / f["seconds"] / 1e9) <= 1e-5 * f["gb_per_s"], r
    # KVSCOPE_ROOFS=20,100 (lib.sh): 20 GB/s, 100 GFLOP/s
    assert abs(f["dram_share"] - f["gb_per_s"] / 20) <= 1e-5 * f["dram_share"], r
    assert abs(f["peak_share"] - f["total_flops"] / f["seconds"] / 1e11) <= 1e-4 * f["peak_share"], r
    assert f["from_cache"] == (f["dram_share"] > 1.05), r
# prefill does more FLOPs per byte than any decode step
c = [r for r in rows if r["run"] == "cached"]
assert float(c[0]["flop_per_byte"]) > 2 * max(float(r["flop_per_byte"]) for r in c[1:]), c
PY
then ok "run tsv: FLOP/B = FLOPs / bytes moved, GB/s = bytes / time, shares over KVSCOPE_ROOFS"
else bad "run tsv: FLOP/B = FLOPs / bytes moved, GB/s = bytes / time, shares over KVSCOPE_ROOFS" "$(head -c 300 "$err")"; fi

run "run json: roofs and each pass's roofline" $KV run --model tiny --prompt-ids $rl_ids --tokens 3 --format json
if [ "$status" -eq 0 ] && python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["roofs"]
assert r["source"] == "KVSCOPE_ROOFS" and r["read_gb_per_s"] == 20 and r["compute_gflop_per_s"] == 100, r
assert r["ridge_flop_per_byte"] == 5, r
t = d["totals"]["cached"]
assert abs(t["roofline"]["flop_per_byte"] * t["roofline"]["bytes_moved"] - sum(
    t[k] for k in t if k.startswith("flops_"))) < 1e-3 * t["roofline"]["bytes_moved"], t
assert all("roofline" in s for s in d["steps"])
PY
then ok "run json: roofs named (KVSCOPE_ROOFS, ridge 5), totals and steps carry their roofline"
else bad "run json: roofs named (KVSCOPE_ROOFS, ridge 5), totals and steps carry their roofline" "exit $status"; fi

# a DRAM roof of 1 kB/s: every pass is above it, and says so in words
run "run: above the DRAM roof" env KVSCOPE_ROOFS=0.000001,100 $KV run --model tiny --prompt-ids $rl_ids --tokens 3
if [ "$status" -eq 0 ] && grep -Eq '^cached +1 decode .* cache +[0-9.]+% ' "$out" &&
    grep -q 'DRAM roof: from cache ([0-9.]*x it: more than memory gives' "$out" && ! grep -Eq '[0-9]{4,}%' "$out"
then ok "run: a pass above the DRAM roof reads 'cache' / 'from cache', never a percentage over 100"
else bad "run: a pass above the DRAM roof reads 'cache' / 'from cache', never a percentage over 100" \
    "$(grep -E 'decode|roof' "$out" | head -5)"; fi
expect_fail "KVSCOPE_ROOFS not two numbers" 2 "KVSCOPE_ROOFS: 'fast' is not READ_GB/s,GFLOP/s" \
    env KVSCOPE_ROOFS=fast $KV run --model tiny --tokens 2

# --- where the roofs come from -----------------------------------------------
mkdir -p "$rl_tmp/bench/kvscope"
printf '# kept by kvscope bench\nwhen 1795000000\nread_bytes_per_s 1.25e10\nflops_per_s 5e10\nisa avx2\n' \
    >"$rl_tmp/bench/kvscope/roofs"
run "roofs kept by bench" env -u KVSCOPE_ROOFS XDG_STATE_HOME="$rl_tmp/bench" $KV run --model tiny --prompt-ids $rl_ids \
    --tokens 2 --format json
if [ "$status" -eq 0 ] && python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["roofs"]
assert r["source"] == "kvscope bench, 2026-11-18 11:06 UTC", r
assert r["read_gb_per_s"] == 12.5 and r["compute_gflop_per_s"] == 50 and r["ridge_flop_per_byte"] == 4, r
assert r["isa"] == "avx2", r
PY
then ok "roofs from bench's file in XDG_STATE_HOME, named with its date"
else bad "roofs from bench's file in XDG_STATE_HOME, named with its date" "exit $status" "$(head -c 300 "$err")"; fi
# the state folder's rule is the progress file's: a relative XDG_STATE_HOME is ignored for HOME
mkdir -p "$rl_tmp/home/.local/state/kvscope"
cp "$rl_tmp/bench/kvscope/roofs" "$rl_tmp/home/.local/state/kvscope/roofs"
run "roofs under HOME" env -u KVSCOPE_ROOFS XDG_STATE_HOME=relative HOME="$rl_tmp/home" $KV run --model tiny \
    --prompt-ids $rl_ids --tokens 2 --format json
if [ "$status" -eq 0 ] && grep -q '"source": "kvscope bench, 2026-11-18' "$out"; then
    ok "a relative XDG_STATE_HOME is ignored: the roofs under HOME/.local/state"
else bad "a relative XDG_STATE_HOME is ignored: the roofs under HOME/.local/state" "exit $status"; fi
# none given nor kept: the probe, named with its time
run "roofs probed" env -u KVSCOPE_ROOFS XDG_STATE_HOME="$rl_tmp/empty" $KV run --model tiny --prompt-ids $rl_ids \
    --tokens 2 --format json
if [ "$status" -eq 0 ] && python3 - "$out" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))["roofs"]
assert r["source"].startswith("probe at start, ") and r["source"].endswith(" UTC"), r
for k in ("read_gb_per_s", "compute_gflop_per_s", "ridge_flop_per_byte"):
    assert math.isfinite(r[k]) and r[k] > 0, (k, r)
assert abs(r["ridge_flop_per_byte"] - r["compute_gflop_per_s"] / r["read_gb_per_s"]) < 1e-6 * r["ridge_flop_per_byte"], r
PY
then ok "no roofs given or kept: a probe at start, its figures finite and its ridge their ratio"
else bad "no roofs given or kept: a probe at start, its figures finite and its ridge their ratio" "exit $status" \
    "$(head -c 300 "$err")"; fi

# --- the view: counters and the roofline panel --------------------------------
# rl_view NAME ARGS...: the last frame after a prefill and a decode step,
# the roofline focused (Shift-Tab from the map); the uncached twin from the
# formula (its passes would only cost time here)
rl_view() {
    f=$rl_tmp/$1.txt
    shift
    $KV view --headless --model tiny --uncached formula --size 100x30 --frames last --keys '<space> <space> <btab>' \
        "$@" >"$f" 2>&1
}
rl_view f16 --cache contiguous+quant:k=f16,v=f16 --batch 8 --prompt-len 200 --tokens 3
rl_view q4 --cache contiguous+quant:k=q4_0,v=q4_0 --batch 8 --prompt-len 200 --tokens 3
rl_view b1 --isa ref --prompt-len 16 --tokens 3
rl_view b4 --prompt-len 16 --tokens 3 --batch 4
$KV run --model tiny --isa ref --prompt-len 16 --tokens 3 --format tsv >"$rl_tmp/b1.tsv"
if python3 - "$rl_tmp" <<'PY'
import csv, re, sys
d = sys.argv[1]
def frame(name):
    return open("%s/%s.txt" % (d, name), encoding="utf-8").read().split("\n")
def decode_point(lines):
    """(intensity in words, column of the newest cached mark C, column of the ridge +)"""
    words = [l for l in lines if "newest: decode," in l]
    assert words, "no newest: decode line"
    x = float(re.search(r"newest: decode, ([0-9.]+) FLOP/B: memory-bound", words[0]).group(1))
    plot = [l for l in lines if "\u2502" in l]
    cols = [l.rfind("C") for l in plot if l.rfind("C") > l.find("\u2502") > 0]
    ridge = [l.find("+", 55) for l in plot if l.find("+", 55) > 0]
    return x, max(cols), ridge[0]
b1 = frame("b1")
text = "\n".join(b1)
for want in ("roofline, roofs: KVSCOPE_ROOFS", "+ ridge 5", "times hidden: each pass drawn on its roof",
             "GB/s", "FLOP/B", "% of 20 GB/s", "% of 100 GFLOP/s"):
    assert want in text, want
# the counters' FLOP/B of this pass is run's flop_per_byte of the same step
rows = [r for r in csv.DictReader(open(d + "/b1.tsv"), delimiter="\t")]
panel = [l for l in b1 if l.startswith("FLOP/B ")][0].split()
assert panel[1] == "%.3g" % float(rows[1]["flop_per_byte"]), (panel, rows[1]["flop_per_byte"])
x1, c1, ridge = decode_point(b1)
assert c1 < ridge, ("decode left of the ridge", c1, ridge)
x4, c4, _ = decode_point(frame("b4"))
assert x4 > 2 * x1, ("--batch 4 moves decode right", x1, x4)
# f16 and q4_0 share their axes (the same labels): the mark itself moves
f16, q4 = frame("f16"), frame("q4")
axis = lambda lines: [l[55:] for l in lines if "FLOP/B" not in l and re.match(r"^.{55} +[0-9.]+k? +[0-9.]+", l)]
assert axis(f16) and axis(f16) == axis(q4), (axis(f16), axis(q4))
xf, cf, _ = decode_point(f16)
xq, cq, _ = decode_point(q4)
assert xq > 1.1 * xf and cq > cf, ("q4_0 moves decode right of f16", xf, cf, xq, cq)
PY
then ok "view: the roofline panel (decode left of the ridge; --batch 4 and q4_0 move it right), FLOP/B = run's"
else bad "view: the roofline panel (decode left of the ridge; --batch 4 and q4_0 move it right), FLOP/B = run's" \
    "$(grep -A22 'counters;' "$rl_tmp/b1.txt" | head -24)"; fi
# the prefill: right of decode, and said to be the newest
$KV view --headless --model tiny --isa ref --size 100x30 --frames last --keys '<space> <btab>' --prompt-len 64 >"$out" 2>&1
if grep -q 'newest: prefill, [0-9.]* FLOP/B: compute-bound' "$out"; then ok "view: a 64-token prefill is right of the ridge"
else bad "view: a 64-token prefill is right of the ridge" "$(grep -E 'newest|ridge' "$out")"; fi
rm -rf "$rl_tmp"
