# test_presets.sh: the source documents' systems by name. The big-model
# presets get smaller overrides, which also shows the options win.

expect_ok "preset teaching: the teaching notes' run" '^preset teaching: the teaching notes' $KV run --preset teaching --tokens 4
expect_ok "preset mixed: the mixed-precision proposal's cache and merged view" 'cache: mixed:hot=32,group=16,cold=q4_0' \
    $KV run --preset mixed --tokens 4
expect_ok "preset encdec: beam search in copy-on-write pages" 'copied on write' $KV run --preset encdec
expect_ok "preset marlin, smaller: fp4 K and V, flash" 'attention: flash' \
    $KV run --preset marlin --set n_layers=2 --prompt-len 2 --tokens 1
expect_ok "preset mla, smaller: the latent cache in pages" 'pages: 1 used' \
    $KV run --preset mla --set n_layers=2 --prompt-len 2 --tokens 1
expect_ok "an option given before the preset still wins" 'cache: contiguous;' \
    $KV run --cache contiguous --preset mixed --tokens 2
expect_fail "unknown preset" 2 "unknown preset 'nope' \(presets: encdec, marlin, mixed, mla, teaching\)" \
    $KV run --preset nope
expect_ok "view --preset mixed opens the simulation on the mixed-precision proposal's cache" 'cache mixed:hot=32,group=16,cold=q4_0' \
    $KV view --preset mixed --headless --size 100x30 --keys '<space>' --frames last
