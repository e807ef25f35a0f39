# test_view.sh: the interactive view, through its headless frames (the same
# View the terminal loop drives, rendered to text): golden frames of the
# worked example at every step, the simulation's counters against what
# `kvscope run --format tsv` reports for the same run, the compare screen,
# the terminal rules, and a few hundred random keys.
# KVSCOPE_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.

golden=tests/golden
view_out=$(mktemp) view_ref=$(mktemp)

# golden NAME FILE: compare FILE with tests/golden/NAME (or write it)
golden() {
    if [ "${KVSCOPE_UPDATE_GOLDEN:-}" = 1 ]; then
        cp "$2" "$golden/$1" && ok "golden $1 (rewritten)"
    elif cmp -s "$2" "$golden/$1"; then
        ok "golden $1"
    else
        bad "golden $1" "frames differ from $golden/$1; first lines of the diff:" \
            "$(diff "$golden/$1" "$2" | head -n 12)"
    fi
}

expect_ok "view --help documents the headless frames" '--headless' $KV view --help
expect_ok "view --help names the minimum size" 'smallest terminal it lays out is 80x24' $KV view --help

# --- the worked example, every step -------------------------------------
$KV view --headless --size 100x30 --keys '<space> <space> <space> <space>' >"$view_out" 2>&1
golden view_example_100x30.txt "$view_out"
$KV view --headless --size 80x24 --keys '<space> <space> <space> <space>' >"$view_out" 2>&1
golden view_example_80x24.txt "$view_out"

# the numbers on screen are the engine's: the cache rows and attention
# weights of the last frame against `kvscope example`, the totals 6 and 18
$KV example >"$view_ref"
if python3 - "$view_out" "$view_ref" <<'EOF'
import re, sys
frames = open(sys.argv[1], encoding="utf-8").read().split("--- frame ")
last = frames[-1]
ref = open(sys.argv[2]).read()
num = r"-?\d+\.\d+"
# cache rows: "K[j] a b c d   V[j] a b c d" on screen; "K[j] [ a, b, c, d ]   V[j] [ ... ]" in example
screen = {m.group(1): re.findall(num, m.group(2)) for m in re.finditer(r"K\[(\d)\]((?: +-?\d+\.\d+){4} +V\[\d\](?: +-?\d+\.\d+){4})", last)}
text = {}
for m in re.finditer(r"K\[(\d)\] \[([^\]]*)\]   V\[\d\] \[([^\]]*)\]", ref):
    text[m.group(1)] = re.findall(num, m.group(2)) + re.findall(num, m.group(3))
assert len(screen) == 6, screen
for j, vals in screen.items():
    assert vals == text[j], (j, vals, text[j])
# attention weights of q5 (the last decode step)
row = re.search(r"q5 +((?:\d\.\d{3} *){6})", last).group(1).split()
want = re.search(r"q5 +((?:\d\.\d{3} *){6})", ref).group(1).split()
assert row == want, (row, want)
assert re.search(r"total +6 +18", last), "summary total"
assert "6 vs 18 rows: 3.00x" in last
EOF
then ok "example frames show the engine's numbers (vs kvscope example)"
else bad "example frames show the engine's numbers (vs kvscope example)"; fi

# a tall terminal: the example's lower half holds the pass's counters,
# the summary's 4 vs 7 rows again, with the FLOPs beside them
expect_ok "example at 160x50: the pass's counters under the table" \
    'tokens projected +1 +4 +7 +1\.75x' \
    $KV view --headless --size 160x50 --keys '<space> <space>' --frames last

# --- the simulation: counters equal `kvscope run --format tsv` ----------
check_counters() { # NAME CACHE: 8 steps of tiny, every counter against run
    name=$1 cache=$2
    $KV view --headless --model tiny --isa ref --cache "$cache" --tokens 8 --size 100x30 --frames last \
        --keys '<space> <space> <space> <space> <space> <space> <space> <space>' >"$view_out" 2>&1
    $KV run --model tiny --isa ref --cache "$cache" --tokens 8 --attention naive --format tsv >"$view_ref"
    $KV run --model tiny --isa ref --tokens 8 --attention naive --no-cache --format tsv >>"$view_ref"
    if python3 - "$view_out" "$view_ref" <<'EOF'
import sys
frame = open(sys.argv[1], encoding="utf-8").read().split("\n")
rows = [l.split("\t") for l in open(sys.argv[2]).read().splitlines() if not l.startswith("run\t")]
head = "run step phase tokens_projected cache_len attn_q attn_k proj_flops attn_flops ffn_flops total_flops weight_bytes_read kv_bytes_read kv_bytes_written allocations bytes_copied cache_bytes_used cache_bytes_reserved seconds token".split()
cached = [dict(zip(head, r)) for r in rows if r[0] == "cached"]
uncached = [dict(zip(head, r)) for r in rows if r[0] == "uncached"]
def total(rs, k): return sum(int(r[k]) for r in rs)
# the counters panel: label in columns 0-16, then this pass, run, uncached (10 wide each)
panel = {}
for line in frame:
    label = line[:17].strip()
    if label:
        panel[label] = [line[17:27].strip(), line[27:37].strip(), line[37:47].strip()]
want = {
    "tokens projected": "tokens_projected", "FLOPs": "total_flops", "projections": "proj_flops",
    "attention": "attn_flops", "FFN": "ffn_flops", "weights read B": "weight_bytes_read",
    "K/V read B": "kv_bytes_read", "K/V written B": "kv_bytes_written", "allocations": "allocations",
    "copied B": "bytes_copied",
}
bad = []
for label, key in want.items():
    step, run, unc = panel[label]
    if step != cached[-1][key]: bad.append((label, "this pass", step, cached[-1][key]))
    if run != str(total(cached, key)): bad.append((label, "run", run, total(cached, key)))
    if unc not in ("-", str(total(uncached, key))): bad.append((label, "uncached", unc, total(uncached, key)))
for label, key in (("cache used B", "cache_bytes_used"), ("cache reserved B", "cache_bytes_reserved")):
    if panel[label][1] != cached[-1][key]: bad.append((label, "run", panel[label][1], cached[-1][key]))
# the uncached column is measured for tiny: rows and FLOPs are all there
if panel["FLOPs"][2] != str(total(uncached, "total_flops")): bad.append(("FLOPs uncached",))
# the tokens generated
tok_line = [l for l in frame if "\u2502" in l and "[" in l][0]
gen = tok_line.split("\u2502")[1].replace("[", "").replace("]", "").split()
# tiny reads bytes: each token shown as its byte (a space as an open box, others escaped)
def shown(b):
    b = int(b)
    if b == 32: return "\u2423"
    if b in (9, 10): return "\\t" if b == 9 else "\\n"
    return chr(b) if 32 < b < 127 else "\\x%02x" % b
if gen != [shown(r["token"]) for r in cached]: bad.append(("tokens", gen))
if bad:
    print(bad)
    sys.exit(1)
EOF
    then ok "simulation counters = run --format tsv ($name)"
    else bad "simulation counters = run --format tsv ($name)"; fi
}
check_counters contiguous contiguous
check_counters dynamic dynamic
check_counters "q8_0/q4_0" "contiguous+quant:k=q8_0,v=q4_0"

$KV view --headless --model tiny --isa ref --tokens 8 --size 100x30 --frames last \
    --keys '<space> <space> <space> <space> <space>' >"$view_out" 2>&1
golden view_sim_tiny_100x30.txt "$view_out"

# the closed form, labelled so, when asked for
expect_ok "simulation: --uncached formula is labelled" 'uncached: formula' \
    $KV view --headless --model tiny --uncached formula --keys '<space> <space>' --frames last

# a paged cache gets its page table; other layouts say they are not paged
expect_ok "simulation: a paged cache shows its page table" 'page table: 4 rows a page' \
    $KV view --headless --model tiny --cache paged:page=4 --keys '<space> <space>' --frames last
# --batch: sequence 1 shares the prompt's full pages by prefix, the fork
# (sequence 2) shares every page and the first decode copies the partial one
$KV view --headless --model tiny --isa ref --cache paged:page=3 --batch 3 --tokens 8 --size 160x50 \
    --frames all --keys '<space> <space> <space>' >"$view_out" 2>&1
if python3 - "$view_out" <<'EOF2'
import re, sys
frames = open(sys.argv[1], encoding="utf-8").read().split("--- frame ")[1:]
def stat(frame, name):
    return int(re.search(name + r" (\d+)", frame).group(1))
assert "forked after the prefill" in frames[0]
prefill, first = frames[1], frames[2]
assert "block tables of 3 sequences" in prefill, prefill
assert re.search(r"seq 2 fork +0→0▓ 1→1▓ 2→2▓", prefill), "the fork maps sequence 0's pages"
assert re.search(r"seq 1 +0→0▓ 1→1▓ 2→\d+(?![\d▓])", prefill), "sequence 1 shares the full pages"
assert stat(prefill, "prefix hits") == 2 and stat(prefill, "shared") == 3 and stat(prefill, "copy-on-write") == 0
assert stat(first, "copy-on-write") == 1 and stat(first, "shared") == 2, first
assert "then 2 forked from 0" in prefill and "sequence 0 of 3" in first
assert "cache paged:page=3, sequence 0 of 3:" in first and "counters, 3 sequences;" in first, first
EOF2
then ok "simulation: --batch 3 shares pages by prefix and fork, copies on write"
else bad "simulation: --batch 3 shares pages by prefix and fork, copies on write"; fi
expect_ok "simulation: contiguous says not paged" 'cache contiguous: .*not paged' \
    $KV view --headless --model tiny --keys '<space>' --frames last

# --- compare, help, choosers ----------------------------------------------
$KV view --headless --model tiny --isa ref --tokens 8 --size 100x30 --frames last \
    --keys '3 <space> <space> <space> <space> <space> <space>' >"$view_out" 2>&1
golden view_compare_tiny_100x30.txt "$view_out"
expect_ok "compare: A is exact, the same tokens as the exact run" '= exact \(all 6\)' cat "$view_out"
expect_ok "help overlay lists keys and the legend" 'legend \(meaning is never carried by colour alone\)' \
    $KV view --headless --size 80x24 --keys '?' --frames last
expect_ok "help closes on any key" 'Nothing has run yet' \
    $KV view --headless --size 80x24 --keys '? x' --frames last
expect_ok "c lists caches the engine accepts" 'contiguous\+quant:k=q4_0,v=q4_0' \
    $KV view --headless --keys 'c' --frames last
expect_ok "c then a choice switches the cache, replayed to the same step" 'cache now dynamic, replayed to pass 3' \
    $KV view --headless --keys '<space> <space> <space> c <down> <enter>' --frames last
expect_ok "m lists the models" 'kjv-small' $KV view --headless --keys 'm' --frames last
expect_ok "m then small: the simulation runs small" 'model now small' \
    $KV view --headless --model tiny --keys 'm <up> <enter>' --frames last
expect_fail "a model too large for the view says why" 2 'holds [0-9.]+ GiB of weights' \
    $KV view --headless --model llama-2-7b
expect_ok "back at the start says so" 'at the start' $KV view --headless --keys '<left>' --frames last
expect_ok "the end of generation says so" 'generation complete: 4 passes' \
    $KV view --headless --keys '<space> <space> <space> <space> <space>' --frames last
expect_ok "play: ticks step, p pauses" 'paused  3/4 passes' \
    $KV view --headless --keys 'p <tick:3> p <tick:5>' --frames last
expect_ok "layer and head keys move the heatmap" 'attention L1 H2' \
    $KV view --headless --model tiny --keys '2 ] } } <space>' --frames last
expect_ok "Tab moves the focus" '▸ counters' $KV view --headless --model tiny --keys '<tab>' --frames last

# the footer and the panels say what they leave out
expect_ok "80 columns: the footer keeps Tab and 1-3" 'Tab panel .*1-3 screen .*\? help +q quit' \
    $KV view --headless --model tiny --size 80x24 --frames last
expect_ok "+ while paused says the new speed" 'play speed now 30 steps/s \(p plays\)' \
    $KV view --headless --model tiny --frames last --keys '+'
expect_ok "the simulation names its model" '▸ model tiny, cache contiguous' \
    $KV view --headless --model tiny --frames last
expect_ok "a cut map says which layers are left out" '\+26 more layers \(L4-L29; \] moves down\)' \
    $KV view --headless --model tiny --set n_layers=30 --frames last --keys '<space>'
expect_ok "a cut map says which layers are above" '\+[0-9]+ layers above \(L0-L' \
    $KV view --headless --model tiny --set n_layers=30 --frames last --keys '<space> ] ] ] ] ] ] ]'
expect_ok "the heatmap names the query rows it shows" 'queries [1-9][0-9]*-[0-9]+ \(the newest\), keys 0-' \
    $KV view --headless --model tiny --size 160x24 --frames last --keys '<space> <space> <space> <space> <space> <space> <space> <space>'
expect_ok "a narrow heatmap names them short" 'q [1-9][0-9]*-14, k 0-38' \
    $KV view --headless --model tiny --size 80x24 --frames last --keys '<space> <space> <space> <space> <space> <space> <space> <space>'
expect_ok "one layer is singular in the model menu" 'worked-example +1 layer,' \
    $KV view --headless --model tiny --tokens 4 --size 120x40 --frames last --keys 'm'

# the model menu offers only what the simulation runs, and says what it left out
$KV view --headless --model tiny --size 160x40 --frames last --keys 'm' >"$view_out" 2>&1
if grep -q 'kjv-small' "$view_out" && ! grep -Eq 'encdec|llama-2-7b|worked-example|deepseek' "$view_out" &&
    grep -q '9 models not listed: 7 too large to load (see --shared), 1 not decoder-only, 1 too short' "$view_out"; then
    ok "m lists only models that run here"
else bad "m lists only models that run here" "$(grep -E 'd_model|not listed' "$view_out")"; fi
n_listed=$(grep -c 'd_model' "$view_out")
loaded=0
for i in $(seq 1 $((n_listed - 1))); do # every other model listed, chosen: it runs
    ups=$(printf '<up> %.0s' $(seq "$i"))
    $KV view --headless --model tiny --size 160x40 --frames last --keys "m $ups <enter>" | grep -q 'model now' &&
        loaded=$((loaded + 1))
done
if [ "$n_listed" -ge 4 ] && [ "$loaded" -eq $((n_listed - 1)) ]; then ok "every model m lists runs ($loaded)"
else bad "every model m lists runs" "$loaded of $((n_listed - 1)) loaded"; fi

# --- terminal rules ---------------------------------------------------------
expect_ok "too small: says have and need" 'terminal too small: have 60x20, need 80x24' \
    $KV view --headless --size 60x20 --frames last
expect_ok "too small at 20x8: phrase by phrase" '^have 20x8,$' $KV view --headless --size 20x8 --frames last
expect_ok "too small: q still quits" 'quit after 1 key' $KV view --headless --size 20x8 --keys 'q' --frames none
expect_ok "resize down and back re-lays out" 'Step 0, prefill' \
    $KV view --headless --keys '<resize:20x8> <resize:100x30> <space>' --frames last
$KV view --headless --ascii --model tiny --keys '<space> <space> 3 <space> ?' >"$view_out" 2>&1
if [ $? -eq 0 ] && ! LC_ALL=C grep -q '[^ -~]' "$view_out"; then ok "--ascii frames are pure ASCII"
else bad "--ascii frames are pure ASCII" "$(LC_ALL=C grep -n '[^ -~]' "$view_out" | head -3)"; fi
expect_fail "view on a pipe: needs a terminal" 2 'needs a terminal; for text output use kvscope run' $KV view
expect_fail "kvscope --model on a pipe: the view, needs a terminal" 2 'needs a terminal' $KV --model small
# a terminal that cannot address the cursor (TERM=dumb), on a real pty:
# one line and exit 2, as an unknown TERM, and no escape codes drawn
python3 - "$KV" >"$view_out" 2>&1 <<'EOF'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "dumb"
    os.execvp("sh", ["sh", "-c", sys.argv[1] + " view --model tiny"])
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
print("EXIT=%d" % os.waitstatus_to_exitcode(status))
EOF
if grep -q "^EXIT=2$" "$view_out" && grep -q "kvscope: terminal type 'dumb' (TERM) cannot move the cursor" "$view_out" &&
    [ "$(grep -c . "$view_out")" -eq 2 ] && ! grep -q "$(printf '\033')" "$view_out"; then
    ok "TERM=dumb: refused in one line, exit 2"
else bad "TERM=dumb: refused in one line, exit 2" "$(cat -v "$view_out" | head -5)"; fi
# --structure as run takes it: the same tokens as `run --structure retrieval`
$KV view --headless --model tiny --isa ref --structure retrieval --tokens 6 --size 120x40 --frames last \
    --keys '<space> <space> <space> <space> <space> <space>' >"$view_out" 2>&1
view_toks=$(grep -A1 'tokens as text' "$view_out" | tail -n 1 | sed 's/.*│ //; s/[][]//g')
run_toks=$($KV run --model tiny --isa ref --structure retrieval --tokens 6 --attention naive --format tsv |
    awk -F'\t' '$1 == "cached" { printf "%s%s", sep, $NF; sep = " " }')
if [ "$view_toks" = "( d ( d ( d" ] && [ "$run_toks" = "40 100 40 100 40 100" ]; then
    ok "view --structure retrieval chooses run's tokens"
else bad "view --structure retrieval chooses run's tokens" "view: $view_toks" "run: $run_toks"; fi
expect_fail "view: bad --structure" 2 "unknown item 'bogus'" $KV view --headless --structure bogus
expect_fail "view: --structure on an MLA model" 2 'attention structure applies to decoder-only' \
    $KV view --headless --model mla-tiny --structure sink
expect_fail "view: --keys needs --headless" 2 '--keys needs --headless' $KV view --keys q
expect_fail "view: bad --size" 2 "--size: '10' is not WxH" $KV view --headless --size 10
expect_fail "view: unknown key name" 2 'unknown key <bogus>' $KV view --headless --keys '<bogus>'
expect_fail "view: bad --screen" 2 "--screen: 'foo' is not one of" $KV view --headless --screen foo
expect_fail "view: bad cache" 2 "unknown cache 'magic'" $KV view --headless --cache magic
# an encoder-decoder: the simulation screen steps its beam search, the
# beams, their slots and block tables (forks share pages), the cross cache
# read by every beam; at the end the best hypothesis is run's
expect_ok "view --preset encdec: step 4 shows 4 beams, shared pages and the one cross cache" \
    'Step 4: 4 beams kept' $KV view --headless --preset encdec --frames last --keys "<space><space><space><space>"
if grep -q 'one copy read by 4 beams' "$out" && grep -q '0→[0-9]*▓' "$out"; then
    ok "view --preset encdec: the cross cache is shared, a page is shared by two beams"
else bad "view --preset encdec: the cross cache is shared, a page is shared by two beams" "$(head -c 1500 "$out")"; fi
run "view --preset encdec: the best hypothesis is run's" $KV run --preset encdec
want=$(awk '/hypotheses, cached/ { f = 1 } f && $1 == "1" { for (i = 6; i <= NF; i++) printf "%s ", $i; exit }' "$out")
run "view --preset encdec: the best hypothesis is run's" $KV view --headless --preset encdec --frames last \
    --keys "$(printf '<space>%.0s' $(seq 1 30))"
got=$(sed -n 's/.*best hypothesis (score [^)]*): *//p' "$out" | tr -s ' ')
if [ -n "$want" ] && [ "$(echo $got)" = "$(echo $want)" ]; then ok "$name"
else bad "$name" "want: $want" "got:  $got"; fi
# view --serve: the serving loop recorded; the pool's pages by the request
# holding them (the shared prompt's page shared), the requests by state;
# the last step has every request done
expect_ok "view --serve: step 30 shows the pool, running and waiting requests" '^running [0-9a-z]:[0-9]+' \
    $KV view --serve --headless --frames last --keys "$(printf '<space>%.0s' $(seq 1 30))"
grep -q '▓' "$out" && grep -q '^waiting ' "$out" && grep -q 'prefix hits [1-9]' "$out" &&
    ok "view --serve: a shared page, the queue and prefix hits on screen" ||
    bad "view --serve: a shared page, the queue and prefix hits on screen" "$(head -c 1500 "$out")"
expect_ok "view --serve: at the end every request is done" '^running none' \
    $KV view --serve --headless --frames last --keys "$(printf '<space>%.0s' $(seq 1 200))"
expect_fail "view --serve: a cache that is not paged" 2 'must be paged' \
    $KV view --serve --headless --cache ring:window=8
expect_ok "view --model encdec: compare says it is for decoders" 'compare runs one decoder.s caches side by side' \
    $KV view --headless --model encdec --frames last --keys "3"
expect_fail "view: --batch above 8 is refused" 2 'at most 8 sequences' $KV view --headless --batch 9

# --- a few hundred random keys, interleaved with resizes: no crash --------
for seed in 1 2 3; do
    keys=$(python3 - "$seed" <<'EOF'
import random, sys
r = random.Random(int(sys.argv[1]))
pool = list("pqrcmt123?[]{}hlxjk+-=_ \t") + ["<bs>", "<c-u>", "<space>", "<left>", "<right>", "<up>", "<down>", "<tab>",
        "<btab>", "<enter>", "<esc>", "<f1>", "<pgup>", "<pgdn>", "<home>", "<end>", "<tick>", "<lt>"]
out = []
for i in range(300):
    if r.random() < 0.08:
        out.append("<resize:%dx%d>" % (r.randint(1, 220), r.randint(1, 70)))
    else:
        k = r.choice(pool)
        if k == "q" and i < 299: k = "<tick>"  # quit only at the end
        out.append({" ": "<space>", "\t": "<tab>"}.get(k, k))
print(" ".join(out + ["<resize:100x30>", "<esc>", "<esc>", "q"]))
EOF
)
    run "random keys (seed $seed)" $KV view --headless --model tiny --tokens 12 --frames none --keys "$keys"
    if [ "$status" -eq 0 ] && grep -q '^--- end: quit' "$out"; then ok "300 random keys and resizes (seed $seed)"
    else bad "300 random keys and resizes (seed $seed)" "exit $status" "$(tail -c 300 "$err")"; fi
done

# t: a prompt typed as text runs from its prefill; the token strip and the
# heatmap's rows show its pieces; what it makes is what run makes of it
run "view: a typed prompt" $KV view --headless --model kjv-tiny --attention naive --tokens 4 --size 120x36 \
    --frames last --keys 't <c-u>And<space>God<space>said<enter> <space> <space> <space> <space>'
if [ "$status" -eq 0 ] && grep -q 'tokens as text: prompt 3, generated 4 of 4' "$out" && grep -q ' 2 ␣said ' "$out"; then
    ok "view: a typed prompt runs, its pieces on the token strip and the heatmap's rows"
else
    bad "view: a typed prompt runs, its pieces on the token strip and the heatmap's rows" "exit $status" \
        "$(grep -E 'tokens as text|␣said' "$out" | head -3)"
fi
strip=$(grep -A1 '─ tokens as text' "$out" | tail -1 | sed 's/ *$//')
$KV run --model kjv-tiny --prompt 'And God said' --tokens 4 >"$view_ref" 2>&1
want=$(sed -n 's/^text (sequence 0, kjv-bpe tokens): //p' "$view_ref")
# the strip shows pieces with blanks between, ␣ for a space: undo that to compare with run's text
got=$(printf '%s' "$strip" | sed 's/ │ / ‖ /; s/\[//; s/\]//' | python3 -c 'import sys; print(sys.stdin.read().replace(" ‖ ", "\x00").replace(" ", "").replace("\u2423", " ").replace("\x00", " ‖ "))')
[ -n "$want" ] && [ "$got" = "$want" ] && ok "view: the typed prompt generates what run --prompt generates ($want)" ||
    bad "view: the typed prompt generates what run --prompt generates" "view: $got" "run:  $want"
run "view: t on a model without a tokenizer" $KV view --headless --model small --screen sim --frames last \
    --keys 't'
[ "$status" -eq 0 ] && grep -q 'reads token ids, not text' "$out" && ok "view: t on a model without a tokenizer says why" ||
    bad "view: t on a model without a tokenizer says why" "exit $status" "$(tail -3 "$out")"
run "view: an empty typed prompt" $KV view --headless --model kjv-tiny --screen sim --frames last --keys 't <c-u><enter>'
[ "$status" -eq 0 ] && grep -q 'an empty prompt' "$out" && ok "view: an empty typed prompt is refused, the old one kept" ||
    bad "view: an empty typed prompt is refused, the old one kept" "exit $status" "$(tail -3 "$out")"

rm -f "$view_out" "$view_ref"
