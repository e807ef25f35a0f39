# paged.labels.gp: written by `kvscope plot paged`; plots/paged.gp loads it
title = "Paged KV cache: internal waste vs page size, and pages saved by prefix sharing"
caption = "model tiny: 2 layers, 2 KV heads x 16, f32 K and V (512 B a position); weights synthetic: gsl mt19937, seed 42; cache paged:page=P, P = 1 .. 256\n(a) 64 requests of lengths uniform on 1 .. 256 (seed 1), their seeded N(0, 1) K, V rows appended straight into the cache; kv_stats counts the empty rows\n(b) real generation, greedy: 8 prompts = a 100-token common prefix + 20 tokens of their own (seed 1), 16 tokens generated; machine: AMD EPYC, 2 cores"
fixed_len = 100
waste_requests = 64
max_len = 256
share_requests = 8
share_prefix = 100
share_rows = 135
