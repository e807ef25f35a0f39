# test_lesson.sh: `kvscope lesson`, as a learner drives it: list, show,
# check (lessons and exercises), quiz with piped answers, progress in the
# state directory, and one clean line on bad input. The course lint itself
# runs as `make check-lessons`; here it meets a broken course and must say so.

# progress goes to a private state directory (and HOME, in case XDG is ignored)
lesson_state=$(mktemp -d)
lesson_home=$(mktemp -d)
lesson_course=$(mktemp -d)
lesson_src=$(mktemp -d)
OLD_XDG=${XDG_STATE_HOME-}
OLD_HOME=$HOME
export XDG_STATE_HOME="$lesson_state" HOME="$lesson_home"

expect_ok "lesson --help names the subcommands" 'kvscope lesson check N \[--file F\]' $KV lesson --help
# the course's size from its files, not typed in: one NN-name.md a lesson
lesson_n=$(ls lessons/[0-9][0-9]-*.md | wc -l | tr -d ' ')
expect_ok "lesson list: nothing done yet" "^kvscope lessons: $lesson_n written, 0 done" $KV lesson list
expect_ok "lesson show 1 prints the lesson" '^# 1\. Why cache' $KV lesson show 1
expect_ok "lesson show renders a check block" 'should be 15,150' $KV lesson show 1
expect_ok "lesson show by id" '^# 3\. Memory math' $KV lesson show memory-math
expect_ok "lesson show 03 (leading zero)" '^# 3\. Memory math' $KV lesson show 03
expect_ok "lesson show names the exercise to copy" 'cp .*lessons/exercises/window\.c my_window\.c' \
    $KV lesson show 7
# the copy command pastes from where the learner is, and climbs no higher than it must
kv_abs=$(cd "$(dirname "$KV")" && pwd)/$(basename "$KV")
for where in "$lesson_src" "$(pwd)/src/kv" "$(pwd)"; do
    starter=$(cd "$where" && "$kv_abs" lesson show 7 2>/dev/null | sed -n 's/^ *cp \(.*\) my_window\.c$/\1/p' | tail -n 1)
    common=$(python3 -c 'import os, sys; print(os.path.commonpath([os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])]))' \
        "$where" lessons)
    ups=$(printf '%s' "$starter" | grep -o '\.\./' | wc -l)
    if [ -n "$starter" ] && (cd "$where" && [ -f "$starter" ]) &&
        { [ "$common" != / ] || [ "$ups" -eq 0 ]; }; then ok "lesson show 7 from $where: cp $starter"
    else bad "lesson show 7 from $where: the starter's path pastes" "got: '$starter' (common directory $common)"; fi
done

# checks pass, and the lesson is marked done in the state directory
expect_ok "lesson check 1 passes" '^lesson 1: 9 of 9 checks pass; done\.$' $KV lesson check 1
if grep -qx 'done why-cache' "$lesson_state/kvscope/progress" 2>/dev/null; then ok "progress is in XDG_STATE_HOME"
else bad "progress is in XDG_STATE_HOME" "no 'done why-cache' in \$XDG_STATE_HOME/kvscope/progress"; fi
expect_ok "lesson list shows the done mark" '^  \[x\]  1  why-cache' $KV lesson list
run "lesson: the list, then the lesson to open next" $KV lesson
if [ "$status" -eq 0 ] && grep -q '^kvscope lessons: ' "$out" && grep -q '^Next: lesson 2, ' "$out" &&
    grep -q '^    kvscope lesson show 2$' "$out" && ! grep -q '^# 2\.' "$out" && [ "$(wc -l <"$out")" -lt 40 ]
then ok "lesson: the list, then the lesson to open next (not the whole lesson)"
else bad "lesson: the list, then the lesson to open next (not the whole lesson)" "exit $status, $(wc -l <"$out") lines" \
    "$(tail -n 5 "$out")"; fi
l2_checks=$(grep -c '^```check$' lessons/02-prefill-decode.md)
expect_ok "lesson check 2 (the worked example, the exercise's solution)" \
    "^lesson 2: $l2_checks of $l2_checks checks pass, exercise passes; done\\.\$" \
    $KV lesson check 2 --file lessons/solutions/decode_layer.c
expect_ok "lesson names the next one further on" '^    kvscope lesson show 3$' $KV lesson

# a quiz reads answers from stdin: right, a hint then wrong, skipped
run "lesson quiz 1 with piped answers" sh -c "printf '275\nhint\n31\n\n' | $KV lesson quiz 1"
if [ "$status" -eq 0 ] && grep -q '^right: 275$' "$out" && grep -q '^hint: The prefill projects' "$out" &&
    grep -q '^wrong: the answer is 30 (you said 31)$' "$out" && grep -q '^skipped: the answer is 52\.40$' "$out" &&
    grep -q '^computed by: kvscope run --model tiny --prompt-len 20 --tokens 11 --no-cache' "$out" &&
    grep -q '^1 of 3 right\.$' "$out"; then ok "lesson quiz 1 with piped answers"
else bad "lesson quiz 1 with piped answers" "exit $status" "stdout: $(head -c 900 "$out")" "stderr: $(head -c 200 "$err")"; fi
if grep -qx 'quiz why-cache 1 3' "$lesson_state/kvscope/progress" 2>/dev/null; then ok "the quiz score is saved"
else bad "the quiz score is saved" "$(cat "$lesson_state/kvscope/progress" 2>/dev/null)"; fi
expect_ok "lesson list shows the quiz score" 'why-cache .*\(quiz 1/3\)' $KV lesson list
run "lesson quiz 1: numbers with separators and units" sh -c "printf '275 rows\n30\n52.4x\n' | $KV lesson quiz 1"
if [ "$status" -eq 0 ] && grep -q '^3 of 3 right\.$' "$out"; then ok "lesson quiz 1: numbers with separators and units"
else bad "lesson quiz 1: numbers with separators and units" "stdout: $(head -c 600 "$out")"; fi
run "lesson quiz 8: a choice by letter, a choice by name" sh -c "printf 'c\nrope-position\n512\nnaive\n' | $KV lesson quiz 8"
if [ "$status" -eq 0 ] && grep -q '^right: c) rope-on-v$' "$out" &&
    grep -q '^wrong: the answer is b) mask-in-decode (you said rope-position)$' "$out" &&
    grep -q '^wrong: the answer is a) flash (you said naive)$' "$out" &&
    grep -q '^2 of 4 right\.$' "$out"; then ok "lesson quiz 8: a choice by letter, a choice by name"
else bad "lesson quiz 8: a choice by letter, a choice by name" "stdout: $(head -c 900 "$out")" "stderr: $(head -c 300 "$err")"; fi
run "lesson quiz: not a number, asked again" sh -c "printf 'many\n275\n' | $KV lesson quiz 1"
if [ "$status" -eq 0 ] && [ "$(grep -c '^a number is expected' "$out")" -eq 1 ] && grep -q '^right: 275$' "$out" &&
    ! grep -q 'you said many' "$out"; then ok "lesson quiz: not a number, asked again"
else bad "lesson quiz: not a number, asked again" "stdout: $(head -c 900 "$out")"; fi
run "lesson quiz stops cleanly at the end of input" sh -c "printf '46\n' | $KV lesson quiz 2"
if [ "$status" -eq 0 ] && grep -q '(no more answers)' "$out" && grep -q '^0 of 3 right\.$' "$out"
then ok "lesson quiz stops cleanly at the end of input"
else bad "lesson quiz stops cleanly at the end of input" "stdout: $(head -c 600 "$out")"; fi

# exercises: the starter fails with expected vs actual, hint and re-run; the solution passes
run "lesson check 7 on the starter fails" $KV lesson check 7
if [ "$status" -eq 1 ] && grep -q 'expected length 1, got 0' "$out" && grep -q '^        hint: ' "$out" &&
    grep -q '^        build it by hand: .* -o window_check && \./window_check$' "$out" &&
    grep -q '^re-run: kvscope lesson check 7$' "$out"; then ok "lesson check 7 on the starter fails"
else bad "lesson check 7 on the starter fails" "exit $status" "stdout: $(head -c 1200 "$out")" "stderr: $(head -c 300 "$err")"; fi
if grep -q '^/' "$out" || grep -q ' /[a-z]' "$out"; then bad "no absolute paths in check output" "$(grep ' /[a-z]' "$out" | head -3)"
else ok "no absolute paths in check output"; fi
cp lessons/solutions/window.c "$lesson_src/my_window.c"
expect_ok "lesson check 7 on the solution passes" '^lesson 7: 10 of 10 checks pass, exercise passes; done\.$' \
    $KV lesson check 7 --file "$lesson_src/my_window.c"
expect_ok "lesson check 3 --file=: the memory formula" 'all [0-9]+ figures match the reference' \
    $KV lesson check 3 --file=lessons/solutions/memory_formula.c
printf 'int broken(void) { return }\n' >"$lesson_src/broken.c"
run "lesson check 7 on a file that does not compile" $KV lesson check 7 --file "$lesson_src/broken.c"
if [ "$status" -eq 1 ] && grep -q 'FAIL  it does not compile' "$out" && grep -q "re-run: kvscope lesson check 7 --file" "$out"
then ok "lesson check 7 on a file that does not compile"
else bad "lesson check 7 on a file that does not compile" "exit $status" "stdout: $(head -c 800 "$out")"; fi

# bad input: one line, exit 2 for usage, 1 for what cannot be done
expect_fail "lesson show: unknown id" 2 "no lesson 'nope': give a number 1 to $lesson_n or an id" $KV lesson show nope
expect_fail "lesson show: number out of range" 2 "no lesson 99: the course has lessons 1 to $lesson_n" $KV lesson show 99
expect_fail "lesson: unknown subcommand" 2 "unknown lesson command 'frob'" $KV lesson frob
expect_fail "lesson show without a number" 2 'needs a lesson number or id' $KV lesson show
expect_fail "lesson check: --file without a value" 2 "'--file' needs a value" $KV lesson check 7 --file
expect_fail "lesson show --file" 2 '--file goes with `lesson check`' $KV lesson show 7 --file x.c
expect_fail "lesson list: stray argument" 2 "unexpected argument 'extra'" $KV lesson list extra
expect_fail "lesson check: unknown option" 2 "unknown option '--fast'" $KV lesson check 1 --fast
expect_fail "lesson check: missing exercise file" 1 "cannot read 'nope.c'" $KV lesson check 7 --file nope.c
expect_fail "lesson: no course found" 1 'KVSCOPE_LESSONS names a directory without manifest.json' \
    env KVSCOPE_LESSONS="$lesson_src" $KV lesson list

# a broken course: a failing check shows expected, actual, hint and the command
mkdir -p "$lesson_course/exercises"
cat >"$lesson_course/manifest.json" <<'EOF'
{ "lessons": [
  { "id": "one", "title": "A lesson with slips", "file": "01-one.md",
    "quiz": [ { "id": "one.q", "ask": "How many?", "run": "kvscope calc --model tiny --format json",
                "value": "model.nope", "hint": "" } ] },
  { "id": "one", "title": "Same id", "file": "03-two.md" },
  { "id": "later", "title": "Later", "waiting_for": "an engine part" }
] }
EOF
cat >"$lesson_course/01-one.md" <<'EOF'
# 1. One

The tiny model has a max_seq_len of 999, and 4,096 heads, and measures 100.

```check
id: one.len
run: kvscope calc --model tiny --format json
value: model.max_seq_len
expect: 999
hint: Look in data/models/tiny.ini.
```

```check
id: one.len
run: kvscope calc --model tiny --format json
value: model.n_layers
expect: 2
hint:
```

```check
id: one.measured
run: kvscope calc --model tiny --format json
value: formats[format=f16].bytes_per_token / 128
expect: 100
tol: 10%
measured: yes
hint: A measured figure.
```

A constant, 11.2, and a figure its tolerance hides: a token is 0.25 KB.

```check
id: one.constant
run: kvscope calc --model tiny --format json
value: 8 * 1.4
expect: 11.2
hint: Arithmetic on constants, no engine.
```

```check
id: one.hidden
run: kvscope calc --model tiny --format json
value: formats[format=f16].bytes_per_token / 1000
expect: 0.25
tol: 5%
hint: 256 B, in KB.
```

Read-backs: a row of 16 values, 65,536 B, 256 positions, 128 B halved to 64.

```check
id: one.shape
run: kvscope calc --model tiny --format json
value: shape.k_len
expect: 16
hint: head_dim.
```

```check
id: one.positions
run: kvscope calc --model tiny --format json
value: formats[format=f16].bytes_total * formats[format=f16].bytes_per_token_layer / formats[format=f16].bytes_per_token_layer
expect: 65,536
hint: Not a read-back.
```

```check
id: one.max-len
run: kvscope calc --model tiny --format json
value: formats[format=f16].bytes_total * formats[format=f16].reference.ratio / formats[format=f16].reference.bytes_per_token
expect: 256
hint: A ratio that cancels.
```

```check
id: one.layer
run: kvscope calc --model tiny --format json
value: formats[format=f16].bytes_per_token_layer
expect: 128
hint: 2 x 2 x 16 x 2.
```

```check
id: one.layer-half
run: kvscope calc --model tiny --format json
value: formats[format=f16].bytes_per_token_layer / 2
expect: 64
hint: Halved.
```
EOF
printf '# 2. Two\n\nNo checks.\n' >"$lesson_course/03-two.md"
printf '# 9. Stray\n' >"$lesson_course/09-stray.md"
run "lesson check: a failing check" env KVSCOPE_LESSONS="$lesson_course" $KV lesson check 1
if [ "$status" -eq 1 ] && grep -q '^  FAIL  one.len$' "$out" && grep -q '^        expected: 999$' "$out" &&
    grep -q '^        actual:   256$' "$out" && grep -q '^        hint:     Look in data/models/tiny.ini.$' "$out" &&
    grep -q '^        command:  kvscope calc --model tiny --format json$' "$out" &&
    grep -q '^re-run: kvscope lesson check 1$' "$out" &&
    grep -q '^  warn  one.measured  *2, expected 100 within 10%: measured on this machine, so not counted$' "$out" &&
    ! grep -q 'FAIL  one.measured' "$out"; then ok "lesson check: a failing check (a measured one only warns)"
else bad "lesson check: a failing check (a measured one only warns)" "exit $status" "stdout: $(head -c 900 "$out")"; fi
# every lesson of the course is written now; the broken course keeps one waiting
expect_ok "lesson list marks lessons waiting for the engine" '^  \[-\]  3  later ' \
    env KVSCOPE_LESSONS="$lesson_course" $KV lesson list
expect_fail "lesson show: a lesson not written yet" 1 'lesson 3 \(later\) is not written yet: it waits for an engine part' \
    env KVSCOPE_LESSONS="$lesson_course" $KV lesson show 3
expect_fail "lesson quiz: a lesson not written yet" 1 'is not written yet' \
    env KVSCOPE_LESSONS="$lesson_course" $KV lesson quiz later
run "lesson lint finds every slip of a broken course" env KVSCOPE_LESSONS="$lesson_course" $KV lesson lint
if [ "$status" -eq 1 ] && grep -q 'check one.len: expected 999, got 256' "$out" &&
    grep -q "id 'one.len' is used twice" "$out" && grep -q "id 'one' is used twice" "$out" &&
    grep -q 'one.len has an empty hint' "$out" && grep -q 'one.q has an empty hint' "$out" &&
    grep -q 'the figure 4,096 has no check beside it' "$out" &&
    grep -q "quiz one.q: value 'model.nope': no field 'nope'" "$out" &&
    grep -q "check one.len: its value 'model.max_seq_len' only reads back the input" "$out" &&
    grep -q "check one.constant: its value '8 \* 1.4' reads nothing from the command's output" "$out" &&
    grep -q 'check one.hidden: the prose says 0.25, but the engine gives 0.26 at that precision' "$out" &&
    grep -q "check one.shape: its value 'shape.k_len' only reads back the input" "$out" &&
    grep -q "check one.layer-half: its value 'formats\[format=f16\].bytes_per_token_layer / 2' is check one.layer's value halved" "$out" &&
    grep -q "check one.max-len: its value 256 is the model's .*max_seq_len (256), read back through a ratio" "$out" &&
    ! grep -q 'check one.positions' "$out" && ! grep -q 'FAIL  check one.layer:' "$out" &&
    grep -q 'lesson file 03-two.md should be lessons/02-' "$out" &&
    grep -q 'lesson two\|lesson one has no check block' "$out" &&
    grep -q 'lessons/09-stray.md is not in the manifest' "$out" &&
    grep -q '^  wait  lesson  3 later' "$out" &&
    grep -q '^  warn  check one.measured (measured on this machine): expected 100 within 10%, got 2 twice' "$out" &&
    ! grep -q 'FAIL  check one.measured' "$out"; then ok "lesson lint finds every slip of a broken course"
else bad "lesson lint finds every slip of a broken course" "exit $status" "stdout: $(head -c 2500 "$out")"; fi

export HOME="$OLD_HOME"
if [ -n "$OLD_XDG" ]; then export XDG_STATE_HOME="$OLD_XDG"; else unset XDG_STATE_HOME; fi
rm -rf "$lesson_state" "$lesson_home" "$lesson_course" "$lesson_src"
