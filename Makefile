# ZeroCopy-Continuity engine build.
#   make            optimised libzc.so and the zc tool (what users load)
#   make test-c     C unit tests under ASan+UBSan, concurrency test under TSan
#   make asan-lib   libzc-asan.so for the Python tests under AddressSanitizer
#   make fuzz       libFuzzer target for the safetensors reader (needs clang)
CC ?= cc
BUILD ?= build
WARN = -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
DEFS = -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
INC = -Iengine/include -Iengine/src
OPT = -O2 -g -fPIC -fvisibility=hidden -pthread
SAN = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -pthread
TSAN = -O1 -g -fsanitize=thread -pthread

SRCS = $(sort $(wildcard engine/src/*.c))
HDRS = $(wildcard engine/include/*.h engine/src/*.h)
TEST_SRCS = $(sort $(wildcard engine/tests/test_*.c))
CLI_SRCS = $(sort $(wildcard engine/cli/*.c))

.PHONY: all lib cli test-c test-helpers asan-lib fuzz clean
all: lib cli test-helpers

lib: $(BUILD)/libzc.so
cli: $(BUILD)/zc

$(BUILD)/libzc.so: $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) $(OPT) -DZC_BUILDING_LIBRARY -shared -o $@ $(SRCS)

$(BUILD)/zc: $(CLI_SRCS) $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) -O2 -g -pthread -o $@ $(CLI_SRCS) $(SRCS) -lm

$(BUILD)/libzc-asan.so: $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) $(SAN) -fPIC -shared -o $@ $(SRCS)
asan-lib: $(BUILD)/libzc-asan.so

$(BUILD)/test_engine: $(TEST_SRCS) engine/tests/harness.c engine/tests/harness.h $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests $(SAN) -o $@ engine/tests/harness.c $(TEST_SRCS) $(SRCS) -lm

$(BUILD)/test_concurrency_tsan: engine/tests/concurrency_main.c engine/tests/harness.c $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) -Iengine/tests $(TSAN) -o $@ engine/tests/harness.c engine/tests/concurrency_main.c $(SRCS) -lm

$(BUILD)/fuzz_replay: engine/fuzz/fuzz_safetensors.c engine/fuzz/replay_main.c $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) $(SAN) -o $@ engine/fuzz/fuzz_safetensors.c engine/fuzz/replay_main.c $(SRCS) -lm

$(BUILD)/crash_child: engine/tests/crash_child.c $(SRCS) $(HDRS) | $(BUILD)
	$(CC) $(WARN) $(DEFS) $(INC) -O1 -g -pthread -o $@ engine/tests/crash_child.c $(SRCS) -lm
test-helpers: $(BUILD)/crash_child

test-c: $(BUILD)/test_engine $(BUILD)/test_concurrency_tsan $(BUILD)/fuzz_replay
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/test_engine
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)/test_concurrency_tsan
	ASAN_OPTIONS=detect_leaks=1 $(BUILD)/fuzz_replay engine/fuzz/corpus engine/tests/malformed

FUZZ_CC ?= clang
$(BUILD)/fuzz_safetensors: engine/fuzz/fuzz_safetensors.c $(SRCS) $(HDRS) | $(BUILD)
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzzing needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev"; exit 1; }
	$(FUZZ_CC) $(DEFS) $(INC) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -pthread -o $@ engine/fuzz/fuzz_safetensors.c $(SRCS) -lm
fuzz: $(BUILD)/fuzz_safetensors

$(BUILD):
	mkdir -p $(BUILD)

clean:
	rm -rf $(BUILD)
