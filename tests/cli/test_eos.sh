# test_eos.sh: generation stops at the model's end-of-text token where the
# model chooses it (greedy, sampled, speculative), says so, and
# --ignore-eos goes on. The end-of-text id is the token a first run chose
# at some step, set as the config's eos_token: computed, not typed in.

eos_dir=$(mktemp -d)

# ids FILE: the generated ids of a json run, space-separated
eos_ids() { python3 -c 'import json, sys; print(" ".join(map(str, json.load(open(sys.argv[1]))["tokens"][0])))' "$1"; }
# eos_pick IDS: "K ID": the first step K >= 6 whose id no earlier step chose
eos_pick() { echo "$1" | tr ' ' '\n' | awk '{ if (NR > 5 && !($1 in seen)) { print NR, $1; exit } seen[$1] = 1 }'; }

# eos_case NAME OPTS...: a first run of 12 tokens, then the same with
# eos_token set to the id of step K: K tokens, the first run's first K,
# and the summary line; with --ignore-eos all 12, the first run's
eos_case() {
    what=$1; shift
    "$KV" run "$@" --tokens 12 --format json >"$eos_dir/first.json" 2>"$err" || {
        bad "$what: a first run" "$(head -c 300 "$err")"; return; }
    first=$(eos_ids "$eos_dir/first.json")
    set -- "$@" --tokens 12
    pick=$(eos_pick "$first")
    if [ -z "$pick" ]; then bad "$what: a step choosing a new id" "tokens: $first"; return; fi
    k=${pick% *} id=${pick#* }
    want=$(echo "$first" | cut -d' ' -f1-"$k")
    run "$what" "$KV" run "$@" --set eos_token="$id" --format json
    got=$(eos_ids "$out" 2>/dev/null)
    said=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])).get("stopped_at_eos", {}); print(s.get("eos"), s.get("tokens"))' "$out" 2>/dev/null)
    if [ "$status" -eq 0 ] && [ "$got" = "$want" ] && [ "$said" = "$id $k" ]; then
        ok "$what: stops at the end-of-text id $id, the first run's step $k"
    else bad "$what: stops at the end-of-text id $id, the first run's step $k" "want: $want ($id $k)" \
        "got: exit $status, $got ($said)" "$(head -c 300 "$err")"; fi
    expect_ok "$what: the table says it stopped" "^stopped at EOS after $k tokens \\(the end-of-text token $id;" \
        "$KV" run "$@" --set eos_token="$id"
    run "$what, --ignore-eos" "$KV" run "$@" --set eos_token="$id" --ignore-eos --format json
    got=$(eos_ids "$out" 2>/dev/null)
    if [ "$status" -eq 0 ] && [ "$got" = "$first" ] && ! grep -q stopped_at_eos "$out"; then
        ok "$what, --ignore-eos: all 12 tokens, the first run's"
    else bad "$what, --ignore-eos: all 12 tokens, the first run's" "want: $first" "got: exit $status, $got"; fi
}

eos_case "run greedy" --model tiny --prompt-len 5
eos_case "run sampled" --model tiny --prompt-len 5 --temperature 1.5 --sample-seed 7
eos_case "run greedy on a paged cache, uncached too" --model tiny --prompt-len 5 --cache paged:page=4 --compare

# speculative decoding: the target's end-of-text token ends the run, and
# its tokens are still the target's alone (which stops there too)
"$KV" run --model kjv-small --prompt "In the beginning" --tokens 12 --format json >"$eos_dir/spec.json" 2>"$err"
pick=$(eos_pick "$(eos_ids "$eos_dir/spec.json")")
k=${pick% *} id=${pick#* }
expect_ok "run --speculate stops at the target's end-of-text id $id, step $k, its tokens the target's" \
    "^stopped at EOS after $k tokens .*|same tokens as the target alone: yes" \
    "$KV" run --model kjv-small --set eos_token="$id" --draft kjv-tiny --speculate 3 --prompt "In the beginning" --tokens 12
if grep -q "^stopped at EOS after $k tokens" "$out" && grep -q 'same tokens as the target alone: yes' "$out"; then
    ok "run --speculate: both lines"
else bad "run --speculate: both lines" "$(head -c 400 "$out")"; fi
expect_ok "run --speculate --ignore-eos: all 12" "generated: 12" \
    "$KV" run --model kjv-small --set eos_token="$id" --draft kjv-tiny --speculate 3 --prompt "In the beginning" \
    --tokens 12 --ignore-eos
expect_ok "run --help names --ignore-eos" '--ignore-eos' "$KV" run --help
expect_fail "run --ignore-eos takes no value" 2 "ignore-eos" "$KV" run --model tiny --ignore-eos=1
# serve: requests end at it (test_serve_eos checks the tokens); --ignore-eos goes on
expect_ok "serve --help names --ignore-eos" '--ignore-eos' "$KV" serve --help
# the first id of the greedy run's that some request chooses: that run
# generates fewer tokens than with --ignore-eos, which stops none
eos_serve() { e=$1; shift; "$KV" serve --model tiny --set eos_token="$e" --requests 4 --output-len 24 --quiet --format json "$@" |
    python3 -c 'import json, sys; s = json.load(sys.stdin)["summary"]; print(s["stopped_at_eos"], s["generated_tokens"])'; }
all="" none=""
for id in $(echo "$first" | tr ' ' '\n' | awk '!seen[$1]++'); do
    all=$(eos_serve "$id" 2>/dev/null)
    [ "${all%% *}" -gt 0 ] 2>/dev/null && { none=$(eos_serve "$id" --ignore-eos 2>/dev/null); break; }
done
if [ -n "$none" ] && [ "${none%% *}" = 0 ] && [ "${all#* }" -lt "${none#* }" ]; then
    ok "serve: end-of-text id $id ends requests (ended, tokens: $all); --ignore-eos: $none"
else bad "serve: requests end at EOS, --ignore-eos goes on" "with: $all" "--ignore-eos: $none"; fi
rm -rf "$eos_dir"
