# kvscope: `make run` opens the main job, `make test` runs every test,
# `make install` puts kvscope on PATH. `make run` first checks the Debian
# packages running needs (data/packages-run.txt); `make test` also those the
# tests need (data/packages-test.txt).

CC       ?= cc
BUILD    ?= build
PKGS     := gsl ncursesw inih jansson
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -Isrc -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
# OPT is what a build may change (the sanitizer pass sets its own); the
# standard, the warnings and the library flags always apply.
# -ffp-contract=off: a * b + c rounds twice unless the code asks for fmaf or
# an FMA intrinsic, under every compiler (GCC's -std=c11 implies it, clang
# would fuse), so the kernels round as they are written, the same on
# every ISA (src/kernels/lanes16.h)
OPT      ?= -O2 -g
override CFLAGS += $(OPT) -std=c11 -ffp-contract=off $(WARN) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -pthread

# the library: every layer below app/ (tests and lesson exercises link it)
LIB_DIRS := util stats kernels text ckpt kv model train sim report plot course
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard src/$(d)/*.c))

# per-ISA kernel files carry their own flags; the rest of the program is
# built for the baseline CPU, so it still runs where AVX2 is missing
ARCH := $(shell $(CC) -dumpmachine 2>/dev/null)
ifneq (,$(findstring x86_64,$(ARCH)))
  LIB_SRC := $(filter-out %_neon.c,$(LIB_SRC))
else ifneq (,$(findstring aarch64,$(ARCH)))
  LIB_SRC := $(filter-out %_avx2.c %_avx512.c %_vnni.c,$(LIB_SRC))
else
  LIB_SRC := $(filter-out %_neon.c %_avx2.c %_avx512.c %_vnni.c,$(LIB_SRC))
endif
ISA_FLAGS_avx2   := -mavx2 -mfma -mf16c
ISA_FLAGS_avx512 := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c
ISA_FLAGS_vnni   := $(ISA_FLAGS_avx512) -mavx512vnni
APP_SRC  := $(wildcard src/app/*.c src/ui/*.c)
LIB_OBJ  := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
APP_OBJ  := $(APP_SRC:src/%.c=$(BUILD)/obj/%.o)
LIB      := $(BUILD)/libkvscope.a
BIN      := $(BUILD)/kvscope

TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)

# the sanitizer pass rebuilds everything with clang, so it also proves the
# tree is warning-free under a second compiler
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

.PHONY: peer peer-if-reachable peer-speed corpus tokenizer models all bin run test test-bins unit-tests cli-tests sanitize cross-test deps deps-test clean plots check-lessons \
	check-layers install uninstall fuzz test-plain test-side test-sanitized test-tail

# deps first, then a fresh make, so pkg-config is asked after any install;
# two compiles at a time (this machine's two cores) unless -j says otherwise
JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j2)
all: deps
	@$(MAKE) --no-print-directory $(JOBS) bin

bin: $(BIN)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%_avx2.o: src/%_avx2.c
	@mkdir -p $(dir $@)
	@echo "  CC  $< (avx2)"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(ISA_FLAGS_avx2) -MMD -MP -c $< -o $@

$(BUILD)/obj/%_avx512.o: src/%_avx512.c
	@mkdir -p $(dir $@)
	@echo "  CC  $< (avx512)"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(ISA_FLAGS_avx512) -MMD -MP -c $< -o $@

$(BUILD)/obj/%_vnni.o: src/%_vnni.c
	@mkdir -p $(dir $@)
	@echo "  CC  $< (avx512 vnni)"
	@$(CC) $(CPPFLAGS) $(CFLAGS) $(ISA_FLAGS_vnni) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@ # anew: a renamed or removed source's old object must not stay in the archive
	@$(AR) rcs $@ $^

$(BIN): $(APP_OBJ) $(LIB)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(APP_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/testutil.h $(LIB)
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -o $@ $< $(LIB) $(TEST_LIBS) $(LDLIBS)

run: all
	@$(BIN)

# every figure that can be made: data, gnuplot scripts and images (plots/README.md)
plots: $(BIN)
	$(BIN) plot --all --out $(BUILD)/plots

# what the tests run, built two jobs at a time (this machine's two cores)
test-bins: $(BIN) $(LIB) $(TEST_BIN)

unit-tests: $(TEST_BIN)
	@set -e; for t in $(TEST_BIN); do echo "== $$t"; $$t; done

# the course lint: every lesson's checks pass, every figure has a check beside
# it, every quiz answer computes, every starter fails and every solution passes
# (lessons/README.md); exercises link $(LIB), found beside $(BIN). The roofs
# are given (no lesson checks them): no probe in each of its 80 runs
check-lessons: $(BIN) $(LIB)
	KVSCOPE_ROOFS=20,100 $(BIN) lesson lint

# the layer rule: every #include points to the same room or one below it
check-layers:
	@sh tests/layers.sh

cli-tests: $(BIN)
	KVSCOPE_BIN=$(BIN) KVSCOPE_SANITIZED=$(SANITIZED) sh tests/cli/run.sh

SAN_MAKE = $(MAKE) --no-print-directory BUILD=$(BUILD)/san CC=clang OPT="$(SAN_FLAGS)" \
	LDFLAGS="-fsanitize=address,undefined"
sanitize:
	$(SAN_MAKE) -j2 test-bins
	$(SAN_MAKE) SANITIZED=1 unit-tests cli-tests

# The NEON kernels, on this x86 machine: the ISA tests cross-built for
# AArch64 (a small stand-in for cmocka in tests/cross) and run under qemu.
CROSS_CC  := aarch64-linux-gnu-gcc
CROSS_SRC := $(filter-out %_avx2.c %_avx512.c %_vnni.c %/bench_blas.c,$(wildcard src/kernels/*.c)) src/util/err.c src/util/clock.c src/stats/counters.c \
	src/util/pool.c src/util/machine.c src/util/human.c src/util/parse.c src/util/sysmem.c
CROSS_TESTS := test_kernels test_attend test_codec test_bench test_matmul_isa
CROSS_OBJ   := $(CROSS_SRC:%.c=$(BUILD)/cross/obj/%.o)
CROSS_FLAGS := -std=c11 -O2 $(WARN) -D_DEFAULT_SOURCE -Itests/cross -Isrc
# the sources built once for the four tests
$(BUILD)/cross/obj/%.o: %.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC  $< (aarch64)"
	@$(CROSS_CC) $(CROSS_FLAGS) -c -o $@ $<
cross-test: $(CROSS_OBJ)
	@set -e; for t in $(CROSS_TESTS); do \
		echo "  CC  tests/unit/$$t.c (aarch64)"; \
		$(CROSS_CC) $(CROSS_FLAGS) -Itests/unit -static -o $(BUILD)/cross/$$t tests/unit/$$t.c $(CROSS_OBJ) -lm; \
		echo "== $$t (neon, qemu-aarch64)"; qemu-aarch64 $(BUILD)/cross/$$t; done

# libFuzzer with ASan and UBSan on every parser of outside input, each for
# FUZZ_TIME seconds: gguf (checkpoints), spec (cache spec strings), cache
# (specs as the layouts open them, within a memory limit), config
# (model .ini files), number (the strict number parsers), lesson (lesson
# Markdown), bpe (merges files), kvw (weights files), llama2c (llama2.c
# checkpoints and tokenizer.bin), gguf_tok (a GGUF's vocabulary made
# kvscope's tokenizer, and a text encoded with it; its seeds, small models
# with a vocabulary, take inputs up to 64 KiB). Each runs with -seed=1.
# Each target tests/fuzz/fuzz_NAME.c is seeded from tests/fuzz/corpus/NAME/, where any
# crasher it finds is kept once the parser is fixed (test_gguf also replays
# gguf's); new inputs go to $(BUILD)/fuzz/corpus/NAME, a crash to
# $(BUILD)/fuzz/NAME-crash-*. Each target links only the sources it reaches.
FUZZ_TIME    ?= 2
FUZZ_TARGETS := gguf spec cache config number lesson bpe kvw llama2c gguf_tok
# the file helpers every reader or writer of a file goes through
FUZZ_SRC_io     := src/util/files.c src/util/outfile.c src/util/tempfiles.c
FUZZ_SRC_gguf   := $(filter-out %/kvw.c,$(wildcard src/ckpt/*.c)) src/kernels/format.c $(FUZZ_SRC_io)
FUZZ_SRC_spec   := src/kv/spec.c src/util/parse.c src/kernels/format.c
FUZZ_SRC_cache  := $(wildcard src/kv/*.c) src/kernels/codec_ref.c src/kernels/format.c src/stats/counters.c \
	src/util/parse.c src/util/sysmem.c src/util/human.c
FUZZ_SRC_config := src/model/config.c src/util/parse.c src/util/files.c src/util/escape.c
FUZZ_SRC_number := src/util/parse.c
FUZZ_SRC_lesson := src/course/lesson_doc.c src/util/files.c
FUZZ_SRC_bpe    := src/text/bpe.c src/text/pretok.c src/text/unicode_class.c $(FUZZ_SRC_io)
FUZZ_SRC_kvw    := src/ckpt/kvw.c src/kernels/codec_ref.c $(FUZZ_SRC_io)
FUZZ_SRC_llama2c := $(FUZZ_SRC_gguf)
FUZZ_SRC_gguf_tok := $(sort $(FUZZ_SRC_gguf) $(FUZZ_SRC_bpe) src/model/gguf_vocab.c src/text/tokenizer.c \
	src/text/spm.c src/text/vocab_bpe.c src/text/byte_alphabet.c)
FUZZ_LIBS_config := $(shell pkg-config --libs inih 2>/dev/null)
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
fuzz: $(FUZZ_BIN)
	@failed=; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/corpus/$$t; \
		case $$t in gguf_tok) max_len=65536 ;; *) max_len=16384 ;; esac; \
		if $(BUILD)/fuzz/fuzz_$$t -seed=1 -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=1024 \
			-artifact_prefix=$(BUILD)/fuzz/$$t- -print_final_stats=1 -max_len=$$max_len \
			$(BUILD)/fuzz/corpus/$$t tests/fuzz/corpus/$$t >$(BUILD)/fuzz/$$t.log 2>&1; then \
			echo "fuzz $$t: no crash in $(FUZZ_TIME) s ($$(sed -n 's/^stat::number_of_executed_units: *//p' \
				$(BUILD)/fuzz/$$t.log) inputs)"; \
		else tail -n 30 $(BUILD)/fuzz/$$t.log; failed="$$failed $$t"; \
			echo "fuzz $$t: the input is in $(BUILD)/fuzz/$$t-*: fix the parser, keep it in tests/fuzz/corpus/$$t/"; fi; \
	done; test -z "$$failed" || { echo "fuzz: crashes in$$failed"; exit 1; }

.SECONDEXPANSION:
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $$(FUZZ_SRC_$$*) src/util/err.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC  $@ (clang, libFuzzer + ASan + UBSan)"
	@clang -std=c11 -g -O1 $(WARN) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(CPPFLAGS) \
		-Itests/fuzz -o $@ $< $(FUZZ_SRC_$*) src/util/err.c $(FUZZ_LIBS_$*) -lm

# make test keeps both cores busy: two streams at a time, each one make
# after another, its output held until it ends (--output-sync) so that a
# stream's lines stay together. Most of a test is one process on one core.
test: deps-test
	$(MAKE) --no-print-directory -j2 test-bins
	$(MAKE) --no-print-directory check-layers
	@echo "make test: the plain tests, beside make peer and the sanitizers' build (each prints when it ends)"
	@$(MAKE) --no-print-directory -j2 --output-sync=recurse test-plain test-side
	@echo "make test: the tests under the sanitizers, beside the course lint, fuzzing and the NEON kernels"
	@$(MAKE) --no-print-directory -j2 --output-sync=recurse test-sanitized test-tail
	@echo "make test: all passed"
test-plain:
	@$(MAKE) --no-print-directory unit-tests
	@$(MAKE) --no-print-directory cli-tests
test-side:
	@$(MAKE) --no-print-directory peer-if-reachable
	@$(SAN_MAKE) test-bins
test-sanitized:
	@$(SAN_MAKE) SANITIZED=1 unit-tests
	@$(SAN_MAKE) SANITIZED=1 cli-tests
test-tail:
	@$(MAKE) --no-print-directory check-lessons
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory cross-test

# llama.cpp as a peer (tests/peer/peer.sh): its prebuilt CPU library and
# headers from two pinned npm packages (downloaded once into $(BUILD)/peer,
# never committed), a driver built against them, and one table: the same
# ids, logits and special tokens on kvscope's own GGUF exports. make test
# runs it where npm reaches its registry and prints a SKIP line where not.
peer: $(BIN) $(LIB)
	@PEER_LDLIBS="$(LDLIBS)" sh tests/peer/peer.sh $(BUILD) $(BIN) $(LIB)
peer-if-reachable: $(BIN) $(LIB)
	@PEER_LDLIBS="$(LDLIBS)" sh tests/peer/peer.sh $(BUILD) $(BIN) $(LIB) --if-reachable
# a decode step's time in llama.cpp and kvscope (tests/peer/speed.sh; not in
# make test: a machine's speed): PEER_SPEED_SHAPE=tiny checks it in seconds
peer-speed: $(BIN) $(LIB)
	@PEER_LDLIBS="$(LDLIBS)" sh tests/peer/peer.sh $(BUILD) $(BIN) $(LIB) --speed

deps:
	@sh tests/deps.sh data/packages-run.txt

deps-test:
	@sh tests/deps.sh data/packages-run.txt data/packages-test.txt

# The training text (data/README.md): the King James Bible from Debian's
# bible-kjv, extracted, split by whole books and checked by its SHA-256.
corpus:
	@sh tests/deps.sh data/packages-corpus.txt
	@sh data/corpus.sh $(BUILD)/corpus

# The shipped BPE merges, learnt again from the training text.
tokenizer: corpus $(BIN)
	$(BIN) tokenize --learn --text $(BUILD)/corpus/kjv-train.txt --vocab 1024 --out data/tokenizer/kjv-bpe.txt

# The trained models of data/models/kjv-*.ini, trained again from scratch
# (minutes for kjv-tiny, under an hour for kjv-small, kjv-base's time in its .kvw.json); each run
# writes data/weights/NAME.kvw, NAME.kvw.json (how it was made) and
# NAME.log.tsv (every step: the loss curve of `kvscope plot loss`).
TRAIN := $(BIN) train --init scratch --text $(BUILD)/corpus/kjv-train.txt \
	--valid $(BUILD)/corpus/kjv-valid.txt --f16
models: corpus $(BIN)
	$(TRAIN) --model kjv-tiny --out data/weights/kjv-tiny.kvw --steps 3000 --batch 16 --lr 3e-3 --warmup 100 \
		--eval-every 250 --ckpt-every 1000 --log data/weights/kjv-tiny.log.tsv
	$(TRAIN) --model kjv-small --out data/weights/kjv-small.kvw --steps 700 --batch 8 --lr 3e-3 --warmup 50 \
		--eval-every 50 --ckpt-every 100 --log data/weights/kjv-small.log.tsv
	$(TRAIN) --model kjv-base --out data/weights/kjv-base.kvw --steps 750 --batch 6 --lr 2e-3 --warmup 60 \
		--eval-every 50 --ckpt-every 50 --log data/weights/kjv-base.log.tsv
	$(TRAIN) --model kjv-base-sink --out data/weights/kjv-base-sink.kvw --steps 750 --batch 6 --lr 2e-3 --warmup 60 \
		--eval-every 50 --ckpt-every 50 --log data/weights/kjv-base-sink.log.tsv

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary; data, lessons and
# the plot scripts under share/kvscope (found from the binary's place, see
# src/util/files.c); the library and headers the lesson exercises link; the
# man page and the bash completion. make uninstall removes exactly these.
PREFIX   ?= /usr/local
SHARE    := $(DESTDIR)$(PREFIX)/share/kvscope
MAN1     := $(DESTDIR)$(PREFIX)/share/man/man1
COMPL    := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
install: $(BIN) $(LIB)
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE)/lib $(MAN1) $(COMPL)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/kvscope
	install -m 644 $(LIB) $(SHARE)/lib/libkvscope.a
	@set -e; for f in $$(find data lessons plots -type f) $$(find src -name '*.h'); do \
		install -D -m 644 "$$f" "$(SHARE)/$$f"; done
	install -m 644 data/kvscope.1 $(MAN1)/kvscope.1
	install -m 644 data/kvscope.bash-completion $(COMPL)/kvscope
	@echo "installed kvscope in $(DESTDIR)$(PREFIX)/bin (its files in $(SHARE))"

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/kvscope $(MAN1)/kvscope.1 $(COMPL)/kvscope
	rm -rf $(SHARE)

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJ:.o=.d) $(APP_OBJ:.o=.d)
