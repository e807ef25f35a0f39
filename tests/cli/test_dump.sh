# test_dump.sh: `kvscope dump` writes .npy files that NumPy loads, and an
# independent NumPy forward pass (numpy_forward.py) recomputes the same
# tokens, logits and cache from the dumped weights alone.

dump_tmp=$(mktemp -d)

# NumPy is a declared dependency (python3-numpy in data/packages-test.txt): a
# missing NumPy fails the test rather than skipping it.
dump_py=""
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import numpy' >/dev/null 2>&1; then dump_py=$p; break; fi
done

expect_ok "dump --help says what is written and how to load it" 'np\.load' $KV dump --help
expect_ok "dump worked-example" 'wrote [0-9]+ arrays' $KV dump --out "$dump_tmp/we"
expect_ok "dump tiny, batch 2" 'wrote [0-9]+ arrays' \
    $KV dump --out "$dump_tmp/tiny" --model tiny --prompt-len 5 --tokens 6 --batch 2
expect_ok "dump dynamic cache, shared layers" 'wrote [0-9]+ arrays' \
    $KV dump --out "$dump_tmp/shared" --model tiny --shared --cache dynamic --prompt-ids 3,1,4,1 --tokens 3

if [ -z "$dump_py" ]; then
    bad "numpy check" "NumPy is required for this test (Debian: python3-numpy, listed in data/packages-test.txt;" \
        "\`make deps\` installs it): neither python3 nor /usr/bin/python3 can import numpy"
else
    for d in we tiny shared; do
        expect_ok "numpy recomputes dump $d" 'numpy_forward: all match' \
            "$dump_py" tests/cli/numpy_forward.py "$dump_tmp/$d"
    done
    expect_ok "manifest lists shared layers and layer0 only" 'ok' "$dump_py" -c "
import json, os, sys
m = json.load(open(sys.argv[1] + '/manifest.json'))
names = [f['name'] for f in m['files']]
assert m['weights']['shared_layers'] and 'layer0.wq.npy' in names and 'layer1.wq.npy' not in names
assert not os.path.exists(sys.argv[1] + '/layer1.wq.npy')
print('ok')" "$dump_tmp/shared"
fi

expect_fail "dump without --out" 2 '--out' $KV dump
expect_fail "dump into a non-empty directory" 2 'not empty.*--force' $KV dump --out "$dump_tmp/we"
expect_ok "dump --force into a non-empty directory" 'wrote' $KV dump --out "$dump_tmp/we" --force --tokens 2
expect_fail "dump with a bad model" 2 'nosuchmodel' $KV dump --out "$dump_tmp/bad" --model nosuchmodel
if [ -e "$dump_tmp/bad" ]; then bad "a failed dump leaves no directory" "found $dump_tmp/bad"
else ok "a failed dump leaves no directory"; fi
expect_fail "dump --out a file" 2 'not a directory' $KV dump --out "$dump_tmp/we/manifest.json"
expect_fail "dump past max_seq_len" 2 'max_seq_len' $KV dump --out "$dump_tmp/long" --tokens 20

rm -rf "$dump_tmp"
