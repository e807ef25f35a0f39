# lib.sh: helpers for the command-line tests (sourced by run.sh).
# Each check prints one line; a failure prints what was expected and what came.

KV=${KVSCOPE_BIN:?set KVSCOPE_BIN to the kvscope binary}
# the machine's roofs, given: no probe in every run and view (a tenth of a
# second each), and frames that are the same on every machine; the tests of
# the probe and of bench's kept roofs unset it (test_roofline.sh)
export KVSCOPE_ROOFS=20,100
pass=0
fail=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

ok() { pass=$((pass + 1)); printf '  ok    %s\n' "$1"; }
bad() { fail=$((fail + 1)); printf '  FAIL  %s\n' "$1"; shift; for l in "$@"; do printf '        %s\n' "$l"; done; }

# run NAME CMD...: run with a time limit, capturing stdout, stderr and status
run() {
    name=$1; shift
    timeout 120 "$@" >"$out" 2>"$err"
    status=$?
}

# run_peak NAME CMD...: as run (a longer limit), and $peak_kib: the largest
# resident set, in KiB, of the command and of everything it ran
# (getrusage's RUSAGE_CHILDREN: Linux keeps the largest of the whole tree)
run_peak() {
    name=$1; shift
    got=$(python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as o, open(sys.argv[2], "w") as e:
    r = subprocess.run(["timeout", "300"] + sys.argv[3:], stdout=o, stderr=e)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$out" "$err" "$@")
    status=${got% *} peak_kib=${got#* }
}

# expect_ok NAME PATTERN CMD...: exit 0 and stdout matches PATTERN (grep -E)
expect_ok() {
    name=$1 pat=$2; shift 2
    run "$name" "$@"
    if [ "$status" -eq 0 ] && grep -Eq -- "$pat" "$out"; then ok "$name"
    else bad "$name" "want: exit 0, stdout matching /$pat/" "got: exit $status" \
        "stdout: $(head -c 300 "$out")" "stderr: $(head -c 300 "$err")"; fi
}

# expect_fail NAME CODE PATTERN CMD...: exit CODE and exactly one stderr line
# "kvscope: ..." matching PATTERN, nothing on stdout
expect_fail() {
    name=$1 code=$2 pat=$3; shift 3
    run "$name" "$@"
    lines=$(wc -l <"$err")
    if [ "$status" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -q '^kvscope: ' "$err" &&
        grep -Eq -- "$pat" "$err" && [ ! -s "$out" ]; then ok "$name"
    else bad "$name" "want: exit $code, one stderr line 'kvscope: ...' matching /$pat/, empty stdout" \
        "got: exit $status, $lines stderr lines" "stderr: $(head -c 400 "$err")" \
        "stdout: $(head -c 200 "$out")"; fi
}

# field FILE KEY: value of "KEY: value" lines in the summary output
field() { sed -n "s/^ *$2: *//p" "$1" | head -n 1; }
