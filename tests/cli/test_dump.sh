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
    # quantized caches: the stored bytes decoded again in NumPy from the formats'
    # layouts equal the decoded rows, and layer 0's prompt rows (no attention
    # before them) are the f32 run's within each format's rounding bound
    expect_ok "dump q8_0 keys, q4_0 values" 'wrote [0-9]+ arrays' $KV dump --out "$dump_tmp/quant" --model tiny \
        --prompt-len 5 --tokens 6 --batch 2 --cache contiguous+quant:k=q8_0,v=q4_0
    expect_ok "numpy decodes the q8_0/q4_0 bytes; prompt rows near the f32 run's" \
        'dump_storage: all match \(4 raw segments' "$dump_py" tests/cli/dump_storage.py "$dump_tmp/quant" "$dump_tmp/tiny"
    expect_ok "manifest: q8_0 keys in blocks of 32 values, 34 bytes" '^q8_0 32 34 34 q4_0 32 18 18 uint8 \(2, 2, 10, 34\)$' \
        "$dump_py" -c "
import json, sys, numpy as np
m = json.load(open(sys.argv[1] + '/manifest.json'))
k, v = m['cache_storage'][0]['k'][0], m['cache_storage'][0]['v'][0]
raw = np.load(sys.argv[1] + '/' + k['file'])
print(k['format'], k['block_values'], k['block_bytes'], k['row_bytes'], v['format'], v['block_values'],
      v['block_bytes'], v['row_bytes'], raw.dtype, raw.shape)" "$dump_tmp/quant"
    expect_ok "dump mixed: q4_0, q8_0 and f16 segments" 'dump_storage: all match' sh -c \
        '"$1" dump --out "$2/mixed" --model tiny --prompt-len 5 --tokens 6 --batch 2 \
            --cache mixed:hot=4,group=2,warm=q8_0,warm_rows=2 >/dev/null &&
         "$3" tests/cli/dump_storage.py "$2/mixed" "$2/tiny"' sh "$KV" "$dump_tmp" "$dump_py"
    expect_ok "dump kivi: per-channel codes with their scales" 'dump_storage: all match' sh -c \
        '"$1" dump --out "$2/kivi" --model tiny --prompt-len 5 --tokens 6 --cache kivi:bits=2,group=4 >/dev/null &&
         "$3" tests/cli/dump_storage.py "$2/kivi"' sh "$KV" "$dump_tmp" "$dump_py"
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

# refused before the run, and nothing left behind; a failure while writing
# removes the folder being written and the parents it made
expect_fail "dump a ring cache: refused before the run" 2 "cache 'ring:window=8' drops rows" \
    $KV dump --out "$dump_tmp/ring" --model tiny --cache ring:window=8
expect_fail "dump a bad cache spec" 2 "unknown cache 'magic'" $KV dump --out "$dump_tmp/magic" --cache magic
expect_fail "dump a cache too small for the run" 1 'cache overflow' \
    $KV dump --out "$dump_tmp/small" --model tiny --cache contiguous:max=3
expect_fail "dump: a write that fails (file size limit)" 1 'cannot write .*File too large' \
    sh -c 'trap "" XFSZ; ulimit -f 8; exec "$@"' sh $KV dump --out "$dump_tmp/made/limited" --model tiny
left=$(cd "$dump_tmp" && ls -d ring magic small made limited *.tmp-* 2>/dev/null)
if [ -z "$left" ]; then ok "failed dumps leave no folder, temporary or made"
else bad "failed dumps leave no folder, temporary or made" "found: $left"; fi
mkdir "$dump_tmp/empty"
expect_ok "dump into an existing empty directory" 'wrote' $KV dump --out "$dump_tmp/empty/" --tokens 2
if [ -f "$dump_tmp/empty/manifest.json" ] && [ -z "$(cd "$dump_tmp" && ls -d *.tmp-* 2>/dev/null)" ]; then
    ok "the empty directory holds the dump, no temporary folder left"
else bad "the empty directory holds the dump, no temporary folder left" "$(ls "$dump_tmp")"; fi

rm -rf "$dump_tmp"
