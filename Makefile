# Khreibaga Zero: one non-recursive Makefile.
#   make            build everything (installs missing Debian packages first)
#   make run        the main job (see README; GAME=NAME for another game)
#   make check      build with -Werror, check the layers (tools/check_layers.sh)
#                   and run every Criterion test
#   make asan       the same tests under AddressSanitizer + UBSan
#   make bench      the benchmarks
#   make learn      the learning benchmark (30 minutes of training, then ratings)
#   make tb         the endgame tablebases up to 5 pieces, verified (docs/tablebase.md)
#   make solve      the start position proven (a White win) and verified (docs/solve.md)
#   make faults     the fault suite, full counts (minutes; root for all of it; docs/faults.md)
#   make fuzz       libFuzzer harnesses, FUZZ_SECONDS each (clang; docs/fuzzing.md)
#   make install    binaries, systemd units, example configuration
#                   (PREFIX=/usr/local SYSCONFDIR=/etc DESTDIR=; see deploy/)
#   make uninstall  removes them again (keeps the configuration and the data)
# Objects go to $(BUILD) (default build/); generated protobuf code to $(BUILD)/gen/.

BUILD    ?= build
CC       ?= gcc
PKGS     := libzmq libprotobuf-c lmdb openblas libmicrohttpd xgboost
OPT      ?= -O2
# x86-64-v2 (2009 on: popcnt, SSE4.2) is what every machine of ours has; the
# rules engine counts bits on every call.
ARCH     ?= $(if $(filter x86_64,$(shell uname -m)),-march=x86-64-v2,)
SAN      ?=
CFLAGS   ?=
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(ARCH) -g -pthread -Wall -Wextra -Wshadow \
            -Wmissing-prototypes -Wno-format-truncation -Werror -MMD -MP $(SAN) -I. -I$(BUILD)/gen
LDFLAGS  += -pthread $(SAN)

.DEFAULT_GOAL := all

# Package flags come from pkg-config, read once into $(BUILD)/config.mk after
# tools/deps.sh has installed whatever pkg-config could not find.
NODEPS_GOALS := clean help uninstall
ifeq ($(filter-out $(NODEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
else
-include $(BUILD)/config.mk
endif
$(BUILD)/config.mk: Makefile tools/deps.sh
	@./tools/deps.sh
	@mkdir -p $(BUILD)
	@{ echo "PKG_CFLAGS := $$(pkg-config --cflags $(PKGS) criterion)"; \
	   echo "PKG_LIBS := $$(pkg-config --libs $(PKGS)) -lm"; \
	   echo "TEST_LIBS := $$(pkg-config --libs criterion)"; } > $@

.PHONY: deps
deps:
	@./tools/deps.sh

CFLAGS += $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS)

# --- sources ---------------------------------------------------------------
PROTO_SRC  := $(wildcard proto/*.proto)
PROTO_C    := $(PROTO_SRC:proto/%.proto=$(BUILD)/gen/%.pb-c.c)
PROTO_H    := $(PROTO_C:.c=.h)
# The library's folders, ground first (docs/architecture.md, "Layers").
LIB_DIRS   := common games solve nn net data search play
COMMON_SRC := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ    := $(COMMON_SRC:%.c=$(BUILD)/obj/%.o) $(PROTO_C:$(BUILD)/gen/%.c=$(BUILD)/obj/gen/%.o)
LIB        := $(BUILD)/libkz.a

KZ_SRC     := $(wildcard tools/kz/*.c)
SERVER_SRC := $(wildcard server/*.c)
WORKER_SRC := $(wildcard worker/*.c)
TRAINER_SRC:= $(wildcard trainer/*.c)
TEST_SRC   := $(wildcard tests/*/*.c)
BENCH_SRC  := $(wildcard tools/bench/bench_*.c)

BINS := $(BUILD)/kz
ifneq ($(SERVER_SRC),)
BINS += $(BUILD)/kz-coordinator
endif
ifneq ($(WORKER_SRC),)
BINS += $(BUILD)/kz-worker
endif
ifneq ($(TRAINER_SRC),)
BINS += $(BUILD)/kz-trainer
endif
BENCHES := $(BENCH_SRC:tools/bench/%.c=$(BUILD)/%)
TEST_BIN := $(BUILD)/test_all

.PHONY: all
all: $(BINS) $(BENCHES)

# --- rules -----------------------------------------------------------------
.SECONDARY: $(PROTO_C) $(PROTO_H)
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c $(BUILD)/config.mk | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Wmissing-prototypes -Wshadow,$(CFLAGS)) -c -o $@ $<

$(BUILD)/obj/%.o: %.c $(BUILD)/config.mk | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# The version (util_version, --version): the release, and the commit when
# built from git. Only util.o carries it; the stamp file changes (and util.o
# is rebuilt) only when the version does.
KZ_RELEASE := 0.1.0
KZ_COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null)
KZ_DIRTY   := $(if $(KZ_COMMIT),$(shell git diff --quiet HEAD -- 2>/dev/null || echo .dirty))
KZ_VERSION := $(KZ_RELEASE)$(if $(KZ_COMMIT),+g$(KZ_COMMIT)$(KZ_DIRTY))
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(BUILD)
	@[ "$$(cat $@ 2>/dev/null)" = "$(KZ_VERSION)" ] || echo "$(KZ_VERSION)" > $@
$(BUILD)/obj/common/util.o: $(BUILD)/version.stamp
$(BUILD)/obj/common/util.o: CFLAGS += -DKZ_VERSION='"$(KZ_VERSION)"'
.PHONY: FORCE
FORCE:

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/kz: $(KZ_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/kz-coordinator: $(SERVER_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# The dashboard's page is built into the coordinator (.incbin).
$(BUILD)/obj/server/dashboard.o: server/dashboard.html
# The viewer's and the play page's files, and those all pages share, are
# built into libkz (.incbin).
WEB_FILES := web/viewer.html web/play.html web/board.js web/page.js web/page.css
$(BUILD)/obj/play/webpages.o: $(WEB_FILES)
# The anchor scales too (play/scale.h).
$(BUILD)/obj/play/scale.o: play/scales.txt

$(BUILD)/kz-worker: $(WORKER_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/kz-trainer: $(TRAINER_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/bench_%: $(BUILD)/obj/tools/bench/bench_%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# The tests also link the trainer's batch assembly (tests/unit/test_targets.c).
$(TEST_BIN): $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/trainer/batch.o \
            $(BUILD)/obj/trainer/reanalyse.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(TEST_LIBS) $(LDLIBS)

# The programs again with the tests' toy game linked in (tests/harness/toy_game.c
# registers it), in $(BUILD)/toy/: a second game through the whole stack in
# make check. Not installed.
TOY_OBJ  := $(BUILD)/obj/tests/harness/toy_game.o
TOY_BINS := $(BUILD)/toy/kz $(BUILD)/toy/kz-coordinator $(BUILD)/toy/kz-worker \
            $(BUILD)/toy/kz-trainer
$(BUILD)/toy/kz: $(KZ_SRC:%.c=$(BUILD)/obj/%.o) $(TOY_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/toy/kz-coordinator: $(SERVER_SRC:%.c=$(BUILD)/obj/%.o) $(TOY_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/toy/kz-worker: $(WORKER_SRC:%.c=$(BUILD)/obj/%.o) $(TOY_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/toy/kz-trainer: $(TRAINER_SRC:%.c=$(BUILD)/obj/%.o) $(TOY_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The fault suite (tools/faults/faults.c, docs/faults.md): linked with the tests'
# process and network helpers, without Criterion (tools/faults/faults.c says why).
# make check runs its short version (tests/system/test_faults.c); `make faults`
# the full counts.
$(BUILD)/faults: $(BUILD)/obj/tools/faults/faults.o $(BUILD)/obj/tests/harness/harness.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# --- entry points ------------------------------------------------------------
# Tests find the real binaries through KZ_BIN_DIR (the toy game's in toy/).
CRITERION_ARGS ?=
.PHONY: check
check: $(BINS) $(TOY_BINS) $(TEST_BIN) $(BUILD)/faults $(BUILD)/bench_learning
	./tools/check_layers.sh
	./tools/check_timeouts.sh
	KZ_BIN_DIR=$(abspath $(BUILD)) ./tools/run_tests.sh $(TEST_BIN) $(BUILD)/check.log $(CRITERION_ARGS)

.PHONY: asan
asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" check

# FAULTS_ARGS="--scenarios=kills --kills=20 ..." (build/faults --help).
FAULTS_ARGS ?=
.PHONY: faults
faults: $(BINS) $(BUILD)/faults
	KZ_BIN_DIR=$(abspath $(BUILD)) $(BUILD)/faults $(FAULTS_ARGS)

# bench_learning is the long one (30 minutes and more): `make learn`, not `make bench`.
.PHONY: bench
bench: $(BINS) $(BENCHES)
	@for b in $(filter-out %/bench_learning,$(BENCHES)); do echo "== $$b"; $$b || exit 1; done
	@echo "== draughts: whole-move perft 11 from the start (docs/rules-draughts.md, D21)"
	@out=$$($(BUILD)/kz perft --game=draughts --turns 11) && echo "$$out" | tail -2 && \
	  echo "$$out" | grep -qx 'perft 11: 85242128' || \
	  { echo "draughts: perft 11 is not OEIS A133046's 85242128"; exit 1; }

# How strong the cluster gets (tools/bench/bench_learning.c): LEARN_ARGS="--minutes=30 ...".
# Khreibaga's runs (no --game in LEARN_ARGS) use the sharper yardstick (docs/learning.md):
# the balanced book, the labelled positions, perfect play's referee on the drawn book, and
# the endgame tables when $(TB_DIR) has them.
LEARN_ARGS ?=
LEARN_BOOK ?= tools/bench/books/khreibaga-balanced.txt
LEARN_POSITIONS ?= tools/bench/books/khreibaga-positions.txt
LEARN_REFEREE_BOOK ?= tools/bench/books/khreibaga-drawn.txt
LEARN_YARDSTICK = $(if $(findstring --game,$(LEARN_ARGS)),,--book=$(LEARN_BOOK) \
  --positions=$(LEARN_POSITIONS) --referee_book=$(LEARN_REFEREE_BOOK) \
  $(if $(wildcard $(TB_DIR)/*.kztb),--tb_dir=$(TB_DIR)))
.PHONY: learn
learn: $(BINS) $(BUILD)/bench_learning
	$(BUILD)/bench_learning $(LEARN_YARDSTICK) $(LEARN_ARGS)

# Endgame tablebases (docs/tablebase.md): every class up to TB_PIECES pieces
# into TB_DIR, each checked against the rules as it is built; resumable.
TB_DIR    ?= var/tb
TB_PIECES ?= 5
.PHONY: tb
tb: $(BUILD)/kz
	$(BUILD)/kz tb build --pieces $(TB_PIECES) --dir $(TB_DIR)

# The start position solved (docs/solve.md): "White does not lose" and "White
# wins" (the disproof of "Black does not lose"), each written as a certificate
# into SOLVE_DIR and checked again by the naive rules. The transposition
# tables stay there: a stopped run resumes. SOLVE_TABLES=DIR uses endgame
# tables (the start needs none).
SOLVE_DIR    ?= var/solve
SOLVE_TABLES ?=
.PHONY: solve
solve: $(BUILD)/kz
	@mkdir -p $(SOLVE_DIR)
	$(BUILD)/kz solve --side white --tables '$(SOLVE_TABLES)' --tt $(SOLVE_DIR)/white.tt \
	  --tt_mb 256 --cert $(SOLVE_DIR)/start-white-not-lose.txt
	$(BUILD)/kz solve --side black --tables '$(SOLVE_TABLES)' --tt $(SOLVE_DIR)/black.tt \
	  --tt_mb 256 --cert $(SOLVE_DIR)/start-white-wins.txt
	$(BUILD)/kz solve verify $(SOLVE_DIR)/start-white-not-lose.txt --tables '$(SOLVE_TABLES)'
	$(BUILD)/kz solve verify $(SOLVE_DIR)/start-white-wins.txt --tables '$(SOLVE_TABLES)'

# --- fuzzing (clang + libFuzzer; see docs/fuzzing.md) -------------------------
# tools/fuzz/fuzz_<target>.c -> build-fuzz/fuzz_<target>, linked with common/
# and the generated protobuf code compiled again with the sanitizers.
# `make fuzz` builds them, writes the generated seeds, and runs each for
# FUZZ_SECONDS; new inputs go to build-fuzz/corpus/<target>, crashes to
# build-fuzz/artifacts/. `make fuzz-build` only builds.
FUZZ_BUILD   := build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -O1 -g $(FUZZ_SAN) -I. -Itools/fuzz \
                -I$(FUZZ_BUILD)/gen $(PKG_CFLAGS)
FUZZ_SRC     := $(wildcard tools/fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRC:tools/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_LIB_OBJ := $(COMMON_SRC:%.c=$(FUZZ_BUILD)/obj/%.o) \
                $(PROTO_SRC:proto/%.proto=$(FUZZ_BUILD)/obj/gen/%.pb-c.o)
FUZZ_LIB     := $(FUZZ_BUILD)/libkz.a
# Per-target input size caps: records and model blobs need room.
FUZZ_MAXLEN_record := 65536
FUZZ_MAXLEN_record_file := 65536
FUZZ_MAXLEN_modelfile := 131072
FUZZ_MAXLEN_wire := 16384

$(FUZZ_BUILD)/gen/%.pb-c.c $(FUZZ_BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(FUZZ_BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(FUZZ_BUILD)/gen $<
$(FUZZ_BUILD)/obj/gen/%.o: $(FUZZ_BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FUZZ_BUILD)/obj/%.o: %.c $(PROTO_SRC:proto/%.proto=$(FUZZ_BUILD)/gen/%.pb-c.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
$(FUZZ_BUILD)/obj/play/webpages.o: $(WEB_FILES)
$(FUZZ_BUILD)/obj/play/scale.o: play/scales.txt
$(FUZZ_LIB): $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(FUZZ_BUILD)/fuzz_%: tools/fuzz/fuzz_%.c tools/fuzz/driver.c tools/fuzz/fuzz.h $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< tools/fuzz/driver.c $(FUZZ_LIB) \
	    $(PKG_LIBS) -lpthread
$(FUZZ_BUILD)/fuzz_seeds: tools/fuzz/seeds.c $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_LIB) $(PKG_LIBS) -lpthread

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS) $(FUZZ_BUILD)/fuzz_seeds
fuzz: fuzz-build
	@$(FUZZ_BUILD)/fuzz_seeds $(FUZZ_BUILD)/seeds
	@mkdir -p $(FUZZ_BUILD)/artifacts
	@for b in $(FUZZ_BINS); do t=$${b##*/fuzz_}; \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  dirs="$(FUZZ_BUILD)/corpus/$$t"; \
	  for d in $(FUZZ_BUILD)/seeds/$$t tools/fuzz/corpus/$$t; do \
	    [ -d $$d ] && dirs="$$dirs $$d"; done; \
	  maxlen=$$(case $$t in record) echo $(FUZZ_MAXLEN_record);; \
	    record_file) echo $(FUZZ_MAXLEN_record_file);; modelfile) echo $(FUZZ_MAXLEN_modelfile);; \
	    wire) echo $(FUZZ_MAXLEN_wire);; *) echo 4096;; esac); \
	  $$b -max_total_time=$(FUZZ_SECONDS) -max_len=$$maxlen -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $$dirs \
	    2> $(FUZZ_BUILD)/fuzz_$$t.log || { tail -40 $(FUZZ_BUILD)/fuzz_$$t.log; exit 1; }; \
	  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::average_exec_per_sec)' \
	    $(FUZZ_BUILD)/fuzz_$$t.log | tr '\n' ' '; echo; \
	done

# GAME=NAME: the cluster plays that game (data in var-NAME/; default Khreibaga in var/).
GAME ?=
.PHONY: run
run: $(BINS)
	$(if $(GAME),KZ_GAME=$(GAME) )./tools/run.sh $(BUILD)

# Installs what is built (tools/install.sh): $(PREFIX)/bin, the units in
# $(UNITDIR), example configuration in $(PREFIX)/share/khreibaga/examples and,
# where absent (never overwritten), in $(SYSCONFDIR)/khreibaga.
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
.PHONY: install uninstall
install: $(BINS)
	./tools/install.sh --build=$(BUILD) --destdir="$(DESTDIR)" --prefix=$(PREFIX) \
	    --sysconfdir=$(SYSCONFDIR) --unitdir=$(UNITDIR)
# Removes what install put there, keeping the configuration and the data.
uninstall:
	./tools/install.sh --uninstall --destdir="$(DESTDIR)" --prefix=$(PREFIX) \
	    --sysconfdir=$(SYSCONFDIR) --unitdir=$(UNITDIR)

.PHONY: clean
clean:
	rm -rf build build-asan build-fuzz

.PHONY: help
help:
	@sed -n '2,14p' Makefile

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
