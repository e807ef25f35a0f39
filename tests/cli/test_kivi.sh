# test_kivi.sh: the KIVI cache (keys per channel in 4 or 2 bits) from the
# command line, and the per-channel code formats refused where rows must
# stand alone.

expect_ok "kivi: 2-bit keys measured against the shadow" 'worst attention error 0\.[0-9]*[1-9]' \
    $KV run --model small --prompt-len 40 --tokens 4 --cache kivi:bits=2 --quality
expect_ok "kivi: keeps every position" 'least mass kept 1\.0000' \
    $KV run --model small --prompt-len 40 --tokens 4 --cache kivi:bits=4,group=16,v=q8_0 --quality
# 43 positions held (40 + 4 - 1): per layer and KV head one group of 32 (fp16
# scales and minimums 128 B, 32 u4 rows of 16 B, 32 q4_0 rows of 18 B: 1216 B)
# and 11 f16 rows of K and V (1408 B); 4 layers x 4 KV heads x 2624 B = 41.00 KiB
expect_ok "kivi: naive attention, the bytes counted by hand" '41\.00 KiB used' \
    $KV run --model small --prompt-len 40 --tokens 4 --cache kivi --attention naive
expect_ok "kivi: listed in --help" 'kivi\[:bits=4,group=32,v=q4_0\]' $KV run --help
expect_fail "kivi: bits=3" 2 "bits=3; per-channel keys take bits=4 or bits=2" $KV run --cache kivi:bits=3
expect_fail "kivi: group=0" 2 "option group" $KV run --cache kivi:group=0
expect_fail "kivi: v must be a row format" 2 "'u4' is a per-channel key code format" \
    $KV run --cache kivi:v=u4
expect_fail "kivi: takes no +quant" 2 "takes no '\+quant'" $KV run --cache kivi+quant:k=q8_0
expect_fail "u4 is no row format for +quant" 2 "'u4' is a per-channel key code format" \
    $KV run --cache contiguous+quant:k=u4
expect_fail "u2 is no row format for calc" 2 "--elem: 'u2' is not one of" $KV calc --elem u2
