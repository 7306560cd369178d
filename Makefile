# ZeroCopy-Continuity engine build (the developer build; the wheel is built by
# engine/CMakeLists.txt through scikit-build-core).
#   make                 optimised libzc.so, the zc tool and the crash-test helper
#   make test-c          C unit tests under ASan+UBSan, concurrency test under TSan,
#                        fuzz-corpus replay, crash test
#   make test-c-strict   the same built as strict POSIX (no _GNU_SOURCE): the nearest
#                        check to macOS on Linux
#   make test-windows    cross-compile for Windows with mingw-w64 and run every test
#                        program under wine (make windows: build only)
#   make asan-lib        libzc-asan.so for the Python tests under AddressSanitizer
#   make fuzz            libFuzzer target for the safetensors reader (needs clang)
CC ?= cc
BUILD ?= build
WARN = -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# Linux keeps its fast paths (fallocate, sync_file_range, transparent huge pages), which
# glibc declares with _GNU_SOURCE; the platform layer checks for each (test-c-strict
# builds without them).
DEFS = -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
STRICT_DEFS = -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64
INC = -Iengine/include -Iengine/src
OPT = -O2 -g -fPIC -fvisibility=hidden -pthread
SAN = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -pthread
TSAN = -O1 -g -fsanitize=thread -pthread

# engine/src/platform/: once.c is shared; posix_*.c or win32_*.c by target;
# *_test.c only in test programs and *_args.c only in the zc tool.
PLAT = engine/src/platform
# The engine's subsystems are the other folders of engine/src/ (engine/README.md).
ENGINE_SRCS = $(sort $(filter-out $(PLAT)/%,$(wildcard engine/src/*/*.c))) $(PLAT)/once.c
POSIX_SRCS = $(filter-out %_test.c %_args.c,$(sort $(wildcard $(PLAT)/posix_*.c)))
WIN32_SRCS = $(filter-out %_test.c %_args.c,$(sort $(wildcard $(PLAT)/win32_*.c)))
SRCS = $(ENGINE_SRCS) $(POSIX_SRCS)
HDRS = $(wildcard engine/include/*.h engine/src/*/*.h)
TEST_SRCS = $(sort $(wildcard engine/tests/test_*.c))
CLI_SRCS = $(sort $(wildcard engine/cli/*.c))
HARNESS = engine/tests/harness.c
FUZZ_SRCS = engine/fuzz/fuzz_safetensors.c engine/fuzz/replay_main.c
# Crash test attempts per run (tests/python/test_crash.py makes 100 more on Linux).
CRASH_ATTEMPTS ?= 20
# Processes and shots each of the shared-folder test (Windows: fewer, wine is slow to start them).
SHARED_PROCS ?= 4
SHARED_SHOTS ?= 250
WIN_SHARED_SHOTS ?= 40

.PHONY: all lib cli test-c test-c-strict test-helpers asan-lib fuzz windows test-windows clean
all: lib cli test-helpers

lib: $(BUILD)/libzc.so
cli: $(BUILD)/zc

$(BUILD)/libzc.so: $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) $(OPT) -DZC_BUILDING_LIBRARY -shared -o $@ $(SRCS) -lm

$(BUILD)/zc: $(CLI_SRCS) $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) -O2 -g -pthread -o $@ $(CLI_SRCS) $(SRCS) $(PLAT)/posix_args.c -lm

$(BUILD)/libzc-asan.so: $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) $(SAN) -fPIC -shared -o $@ $(SRCS) -lm
asan-lib: $(BUILD)/libzc-asan.so

# The engine compiled once under ASan+UBSan for the sanitized test programs.
SAN_OBJS = $(patsubst engine/src/%.c,$(BUILD)/san/%.o,$(SRCS))
SAN_LIB = $(BUILD)/libzc-san.a
$(BUILD)/san/%.o: engine/src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(DEFS) $(INC) $(SAN) -c -o $@ $<
$(SAN_LIB): $(SAN_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/test_engine: $(TEST_SRCS) $(HARNESS) engine/tests/harness.h $(SAN_LIB) $(HDRS)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests $(SAN) -o $@ $(HARNESS) $(TEST_SRCS) $(PLAT)/posix_test.c $(SAN_LIB) -lm

$(BUILD)/test_concurrency_tsan: engine/tests/concurrency_main.c $(HARNESS) $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests $(TSAN) -o $@ $(HARNESS) engine/tests/concurrency_main.c $(SRCS) $(PLAT)/posix_test.c -lm

$(BUILD)/fuzz_replay: $(FUZZ_SRCS) $(HARNESS) $(SAN_LIB) $(HDRS)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests -DZC_TEST_NO_MAIN $(SAN) -o $@ $(FUZZ_SRCS) $(HARNESS) $(PLAT)/posix_test.c $(SAN_LIB) -lm

$(BUILD)/crash_child: engine/tests/crash_child.c $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) -O1 -g -pthread -o $@ engine/tests/crash_child.c $(SRCS) -lm

$(BUILD)/crash_test: engine/tests/crash_main.c $(HARNESS) $(SAN_LIB) $(HDRS)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests -DZC_TEST_NO_MAIN $(SAN) -o $@ $(HARNESS) engine/tests/crash_main.c $(PLAT)/posix_test.c $(SAN_LIB) -lm

# Several processes on one spill folder: the writers run under ASan+UBSan too.
$(BUILD)/shared_child: engine/tests/shared_child.c engine/tests/shared_value.h $(SAN_LIB) $(HDRS)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests $(SAN) -o $@ engine/tests/shared_child.c $(SAN_LIB) -lm

$(BUILD)/shared_test: engine/tests/shared_main.c engine/tests/shared_value.h $(HARNESS) $(SAN_LIB) $(HDRS)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests -DZC_TEST_NO_MAIN $(SAN) -o $@ $(HARNESS) engine/tests/shared_main.c $(PLAT)/posix_test.c $(SAN_LIB) -lm
test-helpers: $(BUILD)/crash_child

test-c: $(BUILD)/test_engine $(BUILD)/test_concurrency_tsan $(BUILD)/fuzz_replay $(BUILD)/crash_child $(BUILD)/crash_test $(BUILD)/shared_child $(BUILD)/shared_test
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/test_engine
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)/test_concurrency_tsan
	ASAN_OPTIONS=detect_leaks=1 $(BUILD)/fuzz_replay engine/fuzz/corpus engine/tests/malformed
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 $(BUILD)/crash_test $(BUILD)/crash_child $(CRASH_ATTEMPTS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 $(BUILD)/shared_test $(BUILD)/shared_child $(SHARED_PROCS) $(SHARED_SHOTS)

# The whole C suite again, every file compiled as strict POSIX.1-2008 C11: what a
# libc without GNU extensions (macOS, the BSDs, musl's strict mode) offers.
test-c-strict:
	$(MAKE) --no-print-directory BUILD=$(BUILD)/strict DEFS="$(STRICT_DEFS)" test-c

# ---- Windows, cross-compiled with mingw-w64 and run under wine ----
WINCC ?= x86_64-w64-mingw32-gcc
WINAR ?= x86_64-w64-mingw32-ar
WINE ?= $(firstword $(wildcard /usr/lib/wine/wine64) wine64)
WIN = $(BUILD)/windows
# __USE_MINGW_ANSI_STDIO: C99 printf (%zu, %llu) rather than the old msvcrt's.  -static:
# no mingw DLL beside ours (the exes and zc.dll import only Windows' own DLLs).
WINFLAGS = $(WARN) -D__USE_MINGW_ANSI_STDIO=1 $(INC) -O2 -static
WIN_SRCS = $(ENGINE_SRCS) $(WIN32_SRCS)
# The engine compiled once for the static programs (tests, zc.exe); zc.dll compiles its own
# copy with dllexport.
WIN_OBJS = $(patsubst engine/src/%.c,$(WIN)/obj/%.o,$(WIN_SRCS))
WIN_LIB = $(WIN)/libzc-static.a
WIN_EXES = $(WIN)/test_engine.exe $(WIN)/test_concurrency.exe $(WIN)/fuzz_replay.exe \
           $(WIN)/crash_child.exe $(WIN)/crash_test.exe $(WIN)/shared_child.exe $(WIN)/shared_test.exe \
           $(WIN)/zc.exe
# A wine prefix of our own under build/, made on first use: never $HOME's.
WINE_RUN = WINEPREFIX=$(abspath $(WIN))/wine-prefix WINEDEBUG=-all $(WINE)

windows: $(WIN)/zc.dll $(WIN_EXES)

$(WIN)/zc.dll: $(WIN_SRCS) $(HDRS) | $(WIN)
	$(WINCC) $(WINFLAGS) -DZC_BUILDING_LIBRARY -shared -o $@ $(WIN_SRCS) -Wl,--out-implib,$(WIN)/libzc.dll.a

$(WIN)/obj/%.o: engine/src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(WINCC) $(WINFLAGS) -c -o $@ $<

$(WIN_LIB): $(WIN_OBJS)
	rm -f $@ && $(WINAR) rcs $@ $^

$(WIN)/zc.exe: $(CLI_SRCS) $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -o $@ $(CLI_SRCS) $(PLAT)/win32_args.c $(WIN_LIB) -lshell32

$(WIN)/test_engine.exe: $(TEST_SRCS) $(HARNESS) $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -Iengine/tests -o $@ $(HARNESS) $(TEST_SRCS) $(PLAT)/win32_test.c $(WIN_LIB)

$(WIN)/test_concurrency.exe: engine/tests/concurrency_main.c $(HARNESS) $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -Iengine/tests -o $@ $(HARNESS) engine/tests/concurrency_main.c $(PLAT)/win32_test.c $(WIN_LIB)

$(WIN)/fuzz_replay.exe: $(FUZZ_SRCS) $(HARNESS) $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -Iengine/tests -DZC_TEST_NO_MAIN -o $@ $(FUZZ_SRCS) $(HARNESS) $(PLAT)/win32_test.c $(WIN_LIB)

$(WIN)/crash_child.exe: engine/tests/crash_child.c $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -o $@ engine/tests/crash_child.c $(WIN_LIB)

$(WIN)/crash_test.exe: engine/tests/crash_main.c $(HARNESS) $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -Iengine/tests -DZC_TEST_NO_MAIN -o $@ $(HARNESS) engine/tests/crash_main.c $(PLAT)/win32_test.c $(WIN_LIB)

$(WIN)/shared_child.exe: engine/tests/shared_child.c engine/tests/shared_value.h $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -Iengine/tests -o $@ engine/tests/shared_child.c $(WIN_LIB)

$(WIN)/shared_test.exe: engine/tests/shared_main.c engine/tests/shared_value.h $(HARNESS) $(WIN_LIB) $(HDRS)
	$(WINCC) $(WINFLAGS) -Iengine/tests -DZC_TEST_NO_MAIN -o $@ $(HARNESS) engine/tests/shared_main.c $(PLAT)/win32_test.c $(WIN_LIB)

# Each program prints its own "N passed, N failed" line.  First: zc.dll exports exactly the
# API that libzc.so does (ZC_API is dllexport there).
WINOBJDUMP ?= x86_64-w64-mingw32-objdump
test-windows: windows $(BUILD)/libzc.so
	$(WINOBJDUMP) -p $(WIN)/zc.dll | sed -n '/Ordinal\/Name Pointer/,/^$$/p' | grep -o 'zc_[a-z0-9_]*' | sort > $(WIN)/exports.dll.txt
	nm -D --defined-only $(BUILD)/libzc.so | awk '$$2 == "T" {print $$3}' | sort > $(WIN)/exports.so.txt
	cmp -s $(WIN)/exports.dll.txt $(WIN)/exports.so.txt || { diff $(WIN)/exports.so.txt $(WIN)/exports.dll.txt; exit 1; }
	@echo "zc.dll exports the $$(wc -l < $(WIN)/exports.dll.txt) functions of libzc.so"
	@command -v $(WINE) >/dev/null || { echo "test-windows needs wine: apt-get install wine64"; exit 1; }
	$(WINE_RUN) $(WIN)/test_engine.exe
	$(WINE_RUN) $(WIN)/test_concurrency.exe
	$(WINE_RUN) $(WIN)/fuzz_replay.exe engine/fuzz/corpus engine/tests/malformed
	$(WINE_RUN) $(WIN)/crash_test.exe $(WIN)/crash_child.exe $(CRASH_ATTEMPTS)
	$(WINE_RUN) $(WIN)/shared_test.exe $(WIN)/shared_child.exe $(SHARED_PROCS) $(WIN_SHARED_SHOTS)
	$(WINE_RUN) $(WIN)/zc.exe --version | grep -E '^zc [0-9]+\.[0-9]+\.[0-9]+'
	@# zc.exe takes UTF-8 paths from a UTF-16 command line (zc_os_utf8_argv)
	rm -rf "$(WIN)/t-télé-日本" && mkdir -p "$(WIN)/t-télé-日本" && cp engine/fuzz/corpus/engine_spill.latent "$(WIN)/t-télé-日本/"
	$(WINE_RUN) $(WIN)/zc.exe verify "$(WIN)/t-télé-日本/engine_spill.latent"

FUZZ_CC ?= clang
$(BUILD)/fuzz_safetensors: engine/fuzz/fuzz_safetensors.c $(SRCS) $(HDRS) | $(BUILD)
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzzing needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev"; exit 1; }
	$(FUZZ_CC) $(DEFS) $(INC) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -pthread -o $@ engine/fuzz/fuzz_safetensors.c $(SRCS) -lm
fuzz: $(BUILD)/fuzz_safetensors

$(BUILD) $(WIN):
	mkdir -p $@

clean:
	rm -rf $(BUILD)
