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
    awk -F'\t' '$1 == "cached" { printf "%s%s", sep, $20; sep = " " }')
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


# t opens the line on the old prompt, selected: a character typed replaces
# it, and a cursor key (Home) keeps it to edit
run "view: t selects the old prompt" $KV view --headless --model kjv-tiny --prompt 'In the beginning' --screen sim \
    --size 80x24 --frames all --keys 't G o d <esc> t <home> X'
if [ "$status" -eq 0 ] && python3 - "$out" <<'EOF'
import re, sys
frames = open(sys.argv[1], encoding="utf-8").read().split("--- frame ")
def line(n):  # the typed line of frame n, inside the box
    m = re.search(r"│ > (.*?) *│", frames[n + 1])
    return m.group(1) if m else None
assert "selected: typing replaces it" in frames[2], frames[2]
assert line(1) == "In the beginning█", line(1)
assert line(4) == "God█", line(4)
assert line(8) == "XIn the beginning", line(8)
assert "selected" not in frames[9], frames[9]
EOF
then ok "view: t selects the old prompt; typing replaces it, Home keeps it"
else bad "view: t selects the old prompt; typing replaces it, Home keeps it" "exit $status" "$(grep '│ >' "$out" | head -9)"; fi

# a prompt longer than the model's positions: warned as it is typed; Enter
# refuses it and the line stays open with the text and the reason
run "view: a prompt too long" $KV view --headless --model kjv-tiny --prompt 'In the' --tokens 120 --screen sim \
    --size 80x24 --frames all --keys "t <end> $(printf '<space>and%.0s' $(seq 8)) <enter>"
if [ "$status" -eq 0 ] && python3 - "$out" <<'EOF'
import re, sys
frames = open(sys.argv[1], encoding="utf-8").read().split("--- frame ")[2:]
warned = 0
for f in frames[:-1]:  # every key typed: the warning exactly when the tokens and 120 more pass 128 positions
    n = int(re.search(r"(\d+) tokens? \(of kjv-tiny's context of 128\)", f).group(1))
    want = "%d tokens and 120 to generate: more than the model's 128 positions" % n
    assert (want in f) == (n + 120 - 1 > 128), (n, f)
    warned += want in f
assert warned >= 3, warned
last = frames[-1]
assert "type a prompt" in last and "> In the and and and and and and and and█" in last, last
assert "needs 130 positions" in last, last
EOF
then ok "view: a prompt too long is warned of as it is typed; Enter keeps it in the line with why"
else bad "view: a prompt too long is warned of as it is typed; Enter keeps it in the line with why" "exit $status" \
    "$(tail -14 "$out")"; fi
expect_ok "view: a prompt alone longer than the model's positions" "300 tokens: more than the model's 256 positions" \
    $KV view --headless --model tiny --screen sim --size 80x24 --frames last --keys "t <c-u> $(printf 'a%.0s' $(seq 300))"

# the key bar lists only keys that apply: none that then say they do not
if python3 - "$KV" <<'EOF'
import subprocess, sys
kv = sys.argv[1]
refused = ("for a decoder stepped live", "compare could not start", "compare runs one decoder", "has one layer",
           "has one head", "reads token ids, not text", "one sequence runs", "s shows another sequence",
           "a recorded run is one panel", "that key does nothing here")
send = {"Spc/→": "<space>", "←": "<left>", "p": "p", "+/-": "+", "Tab": "<tab>", "s": "s", "[ ]": "]", "{ }": "}",
        "c": "c", "m": "m", "t": "t", "r": "r", "?": "?"}
def last_frame(args, keys):
    return subprocess.run([kv, "view", "--headless", "--size", "200x40", "--frames", "last", "--keys", keys] + args,
                          capture_output=True, text=True).stdout
bad, bars = [], {}
for args in (["--serve"], ["--preset", "encdec"], ["--model", "small"], ["--model", "tiny", "--batch", "2"],
             ["--model", "tiny"], []):
    for screen in "123":
        footer = last_frame(args, screen + " ? <esc>").split("\n")[-3]
        keys = [item.rsplit(" ", 1)[0] for item in footer.strip().split("  ")]
        bars[(" ".join(args), screen)] = keys
        for k in keys:
            if k in ("1-3", "q"):
                continue
            footer = "\n".join(last_frame(args, screen + " ? <esc> " + send[k]).split("\n")[-4:-2])
            bad += [(args, screen, k, r) for r in refused if r in footer]
for sim in ("--serve", "--preset encdec"):  # a recorded run: none of these
    bad += [(sim, k) for k in ("c", "m", "t", "s", "Tab", "[ ]", "{ }") if k in bars[(sim, "2")]]
bad += [("--model small", "t")] * ("t" in bars[("--model small", "2")])
bad += [("--batch 2", "no s")] * ("s" not in bars[("--model tiny --batch 2", "2")])
if bad:
    print(bad)
    sys.exit(1)
EOF
then ok "view: the key bar shows only keys that apply (--serve, encdec, small, --batch, every screen)"
else bad "view: the key bar shows only keys that apply (--serve, encdec, small, --batch, every screen)"; fi

# every line cut at the terminal's width ends in an ellipsis: a full row
# ending in a letter or digit must end there in a wide terminal too
if python3 - "$KV" <<'EOF'
import re, subprocess, sys
kv = sys.argv[1]
steps = lambda n: " ".join(["<space>"] * n)
cases = [["--model", "tiny", "--keys", steps(3)], ["--model", "tiny", "--cache", "ring:window=8,sinks=2", "--keys", steps(21)],
         ["--keys", steps(2)], ["--model", "tiny", "--keys", "3 " + steps(3)], ["--serve", "--keys", steps(30)],
         ["--preset", "encdec", "--keys", steps(4)], ["--keys", "?"], ["--model", "kjv-tiny", "--keys", "2 t"],
         ["--model", "tiny", "--keys", "c"], ["--model", "tiny", "--keys", "m"], ["--serve", "--keys", "2 c"],
         ["--model", "tiny", "--cache", "paged:page=3", "--batch", "3", "--keys", steps(2) + " s s"]]
bad = []
for args in cases:
    for ascii in ([], ["--ascii"]):
        run = lambda size: subprocess.run([kv, "view", "--headless", "--frames", "last", "--size", size] + ascii + args,
                                          capture_output=True, text=True).stdout.split("\n")[1:-2]
        wide = "\n".join(run("250x24"))
        for row in run("80x24"):
            if len(row) < 80 or not row[79].isalnum():
                continue
            tail = row[-14:].lstrip()
            if not any(not wide[m.end():m.end() + 1].isalnum() for m in re.finditer(re.escape(tail), wide)):
                bad.append((args, ascii, row))
if bad:
    print("\n".join(map(repr, bad)))
    sys.exit(1)
EOF
then ok "view: at 80x24 a line cut at the edge ends in an ellipsis (12 screens, UTF-8 and ASCII)"
else bad "view: at 80x24 a line cut at the edge ends in an ellipsis (12 screens, UTF-8 and ASCII)"; fi
expect_ok "view: the status line cut at 80 columns ends in …" '^Step 20 decode: .{63}…$' \
    $KV view --headless --model tiny --cache ring:window=8,sinks=2 --size 80x24 --frames last --keys "$(printf '<space>%.0s' $(seq 21))"
expect_ok "view: and in ... with --ascii" '^Step 20 decode: .{61}\.\.\.$' \
    $KV view --headless --ascii --model tiny --cache ring:window=8,sinks=2 --size 80x24 --frames last --keys "$(printf '<space>%.0s' $(seq 21))"

# --batch 3: s cycles the sequence the cache map shows, and the map says
# which; an evicting cache keeps other rows for another sequence
run "view: s cycles the sequence of the map" $KV view --headless --model tiny --cache h2o:budget=8,recent=4 --batch 3 \
    --tokens 12 --size 120x30 --frames all --keys "$(printf '<space>%.0s' $(seq 8)) s s s"
if [ "$status" -eq 0 ] && python3 - "$out" <<'EOF'
import re, sys
frames = open(sys.argv[1], encoding="utf-8").read().split("--- frame ")[1:]
rows = lambda f: [l[5:] for l in f.split("\n") if re.match(r"^.L[01] ", l)]
for n, seq in ((8, 0), (9, 1), (10, 2), (11, 0)):
    assert "cache h2o:budget=8,recent=4, sequence %d of 3" % seq in frames[n], frames[n]
assert rows(frames[8]) != rows(frames[9]), "sequence 1's map is its own"
assert rows(frames[8]) == rows(frames[11])
assert " s sequence " in frames[8] and "the cache map shows sequence 1 of 3" in frames[9]
EOF
then ok "view: s cycles the sequence the map shows (--batch 3), named in its title"
else bad "view: s cycles the sequence the map shows (--batch 3), named in its title" "exit $status" \
    "$(grep -E 'sequence|L[01] ' "$out" | tail -8)"; fi

# text wherever a tokenizer exists: compare's tokens as pieces (the exact
# run's as the simulation's strip shows them); a byte token under the map as
# its hex digits
run "view: compare's tokens as text" $KV view --headless --model kjv-tiny --tokens 6 --size 120x30 --frames last \
    --keys '3 <space> <space> <space> <space> <space> <space>'
cmp_row=$(sed -n 's/^exact  *//p' "$out" | tr -s ' ')
$KV view --headless --model kjv-tiny --tokens 6 --size 250x30 --frames last \
    --keys '<space> <space> <space> <space> <space> <space>' >"$view_ref" 2>&1
sim_row=$(grep -A1 '─ tokens as text' "$view_ref" | tail -1 | sed 's/.*│ //; s/[][]//g' | tr -s ' ')
[ -n "$sim_row" ] && [ "$cmp_row" = "$sim_row" ] && ok "view: compare shows tokens as text ($cmp_row)" ||
    bad "view: compare shows tokens as text" "compare: $cmp_row" "strip:   $sim_row"
run "view: byte tokens under the map" $KV view --headless --model tiny --tokens 8 --size 100x30 --frames last --keys '<space>'
if [ "$status" -eq 0 ] && python3 - "$out" <<'EOF'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
text = [l for l in lines if l.startswith("text ")][0][5:].split()
strip = lines[lines.index([l for l in lines if "─ tokens as text" in l][0]) + 1].split("│")[0].split()
want = [t[2:] if t.startswith("\\x") else t[0] for t in strip]
assert any(t.startswith("\\x") for t in strip), strip
assert text[:len(want)] == want, (text, want)
EOF
then ok "view: byte tokens under the map as their hex digits"
else bad "view: byte tokens under the map as their hex digits" "exit $status" "$(grep -E '^text|│' "$out" | head -3)"; fi

# every key the view takes (found by pressing each: on a screen, in a list,
# in the prompt line) is in the help overlay and in the man page's Keys
if python3 - "$KV" <<'EOF'
import re, subprocess, sys
kv = sys.argv[1]
named = {"<space>": "Space", "<left>": "Left", "<right>": "Right", "<up>": "Up", "<down>": "Down", "<tab>": "Tab",
         "<btab>": "Shift-Tab", "<enter>": "Enter", "<esc>": "Esc", "<f1>": "F1", "<pgup>": "PgUp", "<pgdn>": "PgDn",
         "<home>": "Home", "<end>": "End", "<bs>": "Backspace", "<c-u>": "Ctrl-U"}
printable = [c for c in map(chr, range(33, 127)) if c not in "q<"] + ["<lt>"]
def frames(keys, *args):
    out = subprocess.run([kv, "view", "--headless", "--model", "tiny", "--size", "100x30", "--keys", " ".join(keys)]
                         + list(args), capture_output=True, text=True).stdout
    return re.split(r"--- frame \d+: .*\n", out.split("--- end")[0])[1:]
taken = {"q", "Ctrl-C"}
# on the simulation: a key is taken unless it does nothing
keys = []
for k in printable + list(named):
    keys += [k, "<esc>", "<esc>", "2"]
for k, f in zip(keys[::4], frames(keys, "--screen", "sim")[1::4]):
    if "that key does nothing here" not in f:
        taken.add(named.get(k, "<" if k == "<lt>" else k))
# in a list (c), from its middle: a key is taken when the frame changes
for k in ["j", "k", "q", "x"] + list(named):
    f = frames(["2", "c", "<down>", "<down>", k])
    if f[-1] != f[-2]:
        taken.add(named.get(k, k))
# in the prompt line (t), on the old prompt and after a key that ends the selection
for k in named:
    f = frames(["2", "t", k]), frames(["2", "t", "<end>", "<left>", k])
    if f[0][-1] != f[0][-2] or f[1][-1] != f[1][-2]:
        taken.add(named[k])
help_text = frames(["?"])[-1]
help_words = set(re.split(r"[\s,;:()/]+", help_text.replace("→", " Right ").replace("←", " Left ")
                          .replace("↑", " Up ").replace("↓", " Down ").replace("S-Tab", "Shift-Tab")))
man = open("data/kvscope.1").read()
man = man[man.find(".SS Keys"):].split("\n.SH")[0].replace("\\-", "-").replace('"', " ") if ".SS Keys" in man else ""
man_words = set(re.split(r"[\s,;:()/.]+", man)) | set(re.findall(r"[\[\]{}+=_?-]", man))
missing = sorted((k, where) for k in taken for where, words in (("help", help_words), ("man", man_words))
                 if k not in words)
if missing or len(taken) < 35:
    print(len(taken), missing)
    sys.exit(1)
EOF
then ok "view: every key the view takes is in its help and the man page's Keys"
else bad "view: every key the view takes is in its help and the man page's Keys"; fi

rm -f "$view_out" "$view_ref"
