# ZeroCopy-Continuity engine, the developer build.  The build is the CMake project
# engine/CMakeLists.txt (the one description of what is compiled, and how); each target here
# configures one variant of it in build/<variant>, builds it there and runs its tests with
# CTest, and copies the programs the Python tests and tools use to where they look for them.
#   make                 optimised build/libzc.so, build/zc and build/crash_child (build/release)
#   make test-c          C unit tests under ASan+UBSan (build/asan), concurrency test under TSan
#                        (build/tsan), fuzz-corpus replay, crash test, shared-folder test
#   make test-c-strict   the same built as strict POSIX (ZC_STRICT_POSIX: no _GNU_SOURCE), in
#                        build/strict/: the nearest check to macOS on Linux
#   make test-windows    cross-compile for Windows with mingw-w64 (engine/cmake/mingw-w64.cmake)
#                        and run every test program under wine (make windows: build only)
#   make asan-lib        build/libzc-asan.so for the Python tests under AddressSanitizer
#   make fuzz            build/fuzz_safetensors, the libFuzzer target for the safetensors reader
#                        (needs clang)
CC ?= cc
BUILD ?= build
CMAKE ?= $(firstword $(wildcard .venv/bin/cmake) cmake)
CTEST ?= $(firstword $(wildcard .venv/bin/ctest) ctest)
# Warnings are errors here; install.py builds a user's copy with WERROR=OFF (a newer compiler's
# new warning must not fail an install).
WERROR ?= ON
# Crash test attempts per run (tests/python/test_crash.py makes 100 more on Linux).
CRASH_ATTEMPTS ?= 20
# Processes and shots each of the shared-folder test (Windows: fewer, wine is slow to start them).
SHARED_PROCS ?= 4
SHARED_SHOTS ?= 250
WIN_SHARED_SHOTS ?= 40
# More CMake options for every variant (test-c-strict sets -DZC_STRICT_POSIX=ON).
CMAKE_OPTIONS ?=

# $(call configure,<build dir>,<C compiler>,<options>): configure (or reconfigure) a variant;
# CMake's own messages go to <build dir>/configure.log, shown only when it fails.
configure = mkdir -p $(1) && CC="$(2)" $(CMAKE) -S engine -B $(1) -G "Unix Makefiles" \
	-DCMAKE_RULE_MESSAGES=OFF -DCMAKE_TARGET_MESSAGES=OFF -DZC_BUILD_TESTS=ON -DZC_WERROR=$(WERROR) \
	-DZC_CRASH_ATTEMPTS=$(CRASH_ATTEMPTS) -DZC_SHARED_PROCS=$(SHARED_PROCS) \
	-DZC_SHARED_SHOTS=$(SHARED_SHOTS) $(CMAKE_OPTIONS) $(3) > $(1)/configure.log 2>&1 \
	|| { cat $(1)/configure.log; exit 1; }
# $(call put_in_place,<built file>,<where the tools look>): a copy under a temporary name, then a
# rename over the old file. A process that has the old library loaded (a ComfyUI server, a
# benchmark run) keeps its mapping of the old file; copying over it in place would change the
# pages under that process and crash it.
put_in_place = cp -p $(1) $(2).tmp && mv -f $(2).tmp $(2)
REL = $(BUILD)/release
REL_OPTIONS = -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN = $(BUILD)/asan
ASAN_OPTIONS_CMAKE = -DCMAKE_BUILD_TYPE=Debug -DZC_SANITIZE=address
TSAN = $(BUILD)/tsan
TSAN_OPTIONS_CMAKE = -DCMAKE_BUILD_TYPE=Debug -DZC_SANITIZE=thread

# The variants share build directories: one step at a time (each cmake --build runs its own
# compiles in parallel, on make's job slots).
.NOTPARALLEL:
.PHONY: all lib cli test-c test-c-strict test-helpers asan-lib fuzz windows test-windows clean FORCE
all: lib cli test-helpers

lib: $(BUILD)/libzc.so
cli: $(BUILD)/zc
test-helpers: $(BUILD)/crash_child
asan-lib: $(BUILD)/libzc-asan.so

$(BUILD)/libzc.so: FORCE
	@$(call configure,$(REL),$(CC),$(REL_OPTIONS))
	+$(CMAKE) --build $(REL) --target zc
	$(call put_in_place,$(REL)/libzc.so,$@)

$(BUILD)/zc: FORCE
	@$(call configure,$(REL),$(CC),$(REL_OPTIONS))
	+$(CMAKE) --build $(REL) --target zc_tool
	$(call put_in_place,$(REL)/zc,$@)

$(BUILD)/crash_child: FORCE
	@$(call configure,$(REL),$(CC),$(REL_OPTIONS))
	+$(CMAKE) --build $(REL) --target crash_child
	$(call put_in_place,$(REL)/crash_child,$@)

$(BUILD)/libzc-asan.so: FORCE
	@$(call configure,$(ASAN),$(CC),$(ASAN_OPTIONS_CMAKE))
	+$(CMAKE) --build $(ASAN) --target zc
	$(call put_in_place,$(ASAN)/libzc.so,$@)

# Every test but the concurrency test under ASan+UBSan, the concurrency test under TSan.  Each
# program prints its own "N passed, N failed" line (ctest -V shows it, after the test's number).
test-c:
	@$(call configure,$(ASAN),$(CC),$(ASAN_OPTIONS_CMAKE))
	+$(CMAKE) --build $(ASAN)
	@$(call configure,$(TSAN),$(CC),$(TSAN_OPTIONS_CMAKE))
	+$(CMAKE) --build $(TSAN) --target test_concurrency
	$(CTEST) --test-dir $(ASAN) -V -E '^concurrency$$'
	$(CTEST) --test-dir $(TSAN) -V -R '^concurrency$$'

# The whole C suite again, every file compiled as strict POSIX.1-2008 C11: what a
# libc without GNU extensions (macOS, the BSDs, musl's strict mode) offers.
test-c-strict:
	$(MAKE) --no-print-directory BUILD=$(BUILD)/strict CMAKE_OPTIONS="$(CMAKE_OPTIONS) -DZC_STRICT_POSIX=ON" test-c

# ---- Windows, cross-compiled with mingw-w64 and run under wine ----
WINE ?= $(firstword $(wildcard /usr/lib/wine/wine64) wine64)
WIN = $(BUILD)/windows
# A wine prefix of our own under build/, made on first use: never $HOME's.
WINE_PREFIX = $(abspath $(WIN))/wine-prefix
WINE_RUN = WINEPREFIX=$(WINE_PREFIX) WINEDEBUG=-all $(WINE)
WIN_OPTIONS = -DCMAKE_TOOLCHAIN_FILE=$(abspath engine/cmake/mingw-w64.cmake) \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DZC_SHARED_SHOTS=$(WIN_SHARED_SHOTS) \
	-DZC_WINE=$(WINE) -DZC_WINE_PREFIX=$(WINE_PREFIX)

windows:
	@$(call configure,$(WIN),,$(WIN_OPTIONS))
	+$(CMAKE) --build $(WIN)

# Each program prints its own "N passed, N failed" line.  First: zc.dll exports exactly the
# API that libzc.so does (ZC_API is dllexport there).
WINOBJDUMP ?= x86_64-w64-mingw32-objdump
test-windows: windows $(BUILD)/libzc.so
	$(WINOBJDUMP) -p $(WIN)/zc.dll | sed -n '/Ordinal\/Name Pointer/,/^$$/p' | grep -o 'zc_[a-z0-9_]*' | sort > $(WIN)/exports.dll.txt
	nm -D --defined-only $(BUILD)/libzc.so | awk '$$2 == "T" {print $$3}' | sort > $(WIN)/exports.so.txt
	cmp -s $(WIN)/exports.dll.txt $(WIN)/exports.so.txt || { diff $(WIN)/exports.so.txt $(WIN)/exports.dll.txt; exit 1; }
	@echo "zc.dll exports the $$(wc -l < $(WIN)/exports.dll.txt) functions of libzc.so"
	@command -v $(WINE) >/dev/null || { echo "test-windows needs wine: apt-get install wine64"; exit 1; }
	$(CTEST) --test-dir $(WIN) -V
	@# zc.exe takes UTF-8 paths from a UTF-16 command line (zc_os_utf8_argv)
	rm -rf "$(WIN)/t-télé-日本" && mkdir -p "$(WIN)/t-télé-日本" && cp engine/fuzz/corpus/engine_spill.latent "$(WIN)/t-télé-日本/"
	$(WINE_RUN) $(WIN)/zc.exe verify "$(WIN)/t-télé-日本/engine_spill.latent"

# ---- libFuzzer ----
FUZZ_CC ?= clang
fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzzing needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev"; exit 1; }
	@$(call configure,$(BUILD)/fuzz,$(FUZZ_CC),-DCMAKE_BUILD_TYPE=Debug -DZC_FUZZ=ON -DZC_WERROR=OFF)
	+$(CMAKE) --build $(BUILD)/fuzz --target fuzz_safetensors
	$(call put_in_place,$(BUILD)/fuzz/fuzz_safetensors,$(BUILD)/fuzz_safetensors)

clean:
	rm -rf $(BUILD)
