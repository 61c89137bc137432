# Khreibaga Zero: one non-recursive Makefile.
#   make            build everything (installs missing Debian packages first)
#   make run        the main job (see README)
#   make check      build with -Werror and run every Criterion test
#   make asan       the same tests under AddressSanitizer + UBSan
#   make bench      the benchmarks
#   make install    binaries, systemd units, example configuration
#                   (PREFIX=/usr/local SYSCONFDIR=/etc DESTDIR=; see deploy/)
# Objects go to $(BUILD) (default build/); generated protobuf code to $(BUILD)/gen/.

BUILD    ?= build
CC       ?= gcc
PKGS     := libzmq libprotobuf-c lmdb openblas libmicrohttpd
OPT      ?= -O2
# x86-64-v2 (2009 on: popcnt, SSE4.2) is what every machine of ours has; the
# rules engine counts bits on every call.
ARCH     ?= $(if $(filter x86_64,$(shell uname -m)),-march=x86-64-v2,)
SAN      ?=
CFLAGS   ?=
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(ARCH) -g -pthread -Wall -Wextra -Wshadow \
            -Wmissing-prototypes -Wno-format-truncation -Werror -MMD -MP $(SAN) -Icommon -I$(BUILD)/gen
LDFLAGS  += -pthread $(SAN)

.DEFAULT_GOAL := all

# Package flags come from pkg-config, read once into $(BUILD)/config.mk after
# tools/deps.sh has installed whatever pkg-config could not find.
NODEPS_GOALS := clean help
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
COMMON_SRC := $(wildcard common/*.c)
LIB_OBJ    := $(COMMON_SRC:%.c=$(BUILD)/obj/%.o) $(PROTO_C:$(BUILD)/gen/%.c=$(BUILD)/obj/gen/%.o)
LIB        := $(BUILD)/libkz.a

KZ_SRC     := $(wildcard tools/kz*.c)
SERVER_SRC := $(wildcard server/*.c)
WORKER_SRC := $(wildcard worker/*.c)
TRAINER_SRC:= $(wildcard trainer/*.c)
TEST_SRC   := $(wildcard tests/*.c)
BENCH_SRC  := $(wildcard tools/bench_*.c)

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
BENCHES := $(BENCH_SRC:tools/%.c=$(BUILD)/%)
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

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/kz: $(KZ_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/kz-coordinator: $(SERVER_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/kz-worker: $(WORKER_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/kz-trainer: $(TRAINER_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/bench_%: $(BUILD)/obj/tools/bench_%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(TEST_BIN): $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(TEST_LIBS) $(LDLIBS)

# --- entry points ------------------------------------------------------------
# Tests find the real binaries through KZ_BIN_DIR.
CRITERION_ARGS ?=
.PHONY: check
check: $(BINS) $(TEST_BIN)
	KZ_BIN_DIR=$(abspath $(BUILD)) $(TEST_BIN) $(CRITERION_ARGS)

.PHONY: asan
asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" check

.PHONY: bench
bench: $(BINS) $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b"; $$b || exit 1; done

.PHONY: run
run: $(BINS)
	./tools/run.sh $(BUILD)

# Installs what is built (tools/install.sh): $(PREFIX)/bin, the units in
# $(UNITDIR), example configuration in $(PREFIX)/share/khreibaga/examples and,
# where absent (never overwritten), in $(SYSCONFDIR)/khreibaga.
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
.PHONY: install
install: $(BINS)
	./tools/install.sh --build=$(BUILD) --destdir="$(DESTDIR)" --prefix=$(PREFIX) \
	    --sysconfdir=$(SYSCONFDIR) --unitdir=$(UNITDIR)

.PHONY: clean
clean:
	rm -rf build build-asan

.PHONY: help
help:
	@sed -n '2,9p' Makefile

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
