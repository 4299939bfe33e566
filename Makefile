# kftrainer - front door. `make` builds, `make test` runs every test tier this
# machine can run, `make demo` runs the main example. Each target installs the
# system dependencies first when something is missing (scripts/install-deps.sh).
BUILD      ?= build
PREFIX     ?= /usr/local
JOBS       ?= 2
CMAKE_ARGS ?=

.PHONY: all deps configure build test unit bench check-format format crds fuzz fuzz-run \
        install demo clean

all: build

deps:
	@scripts/install-deps.sh --check >/dev/null 2>&1 || scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j$(JOBS)

# Every tier in one ctest run, so the closing line is ctest's summary.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -L 'unit|asan'

# Benchmarks print figures (median, p10, p90); they never fail on time.
bench: build
	$(BUILD)/bench/bench_render

# Regenerate manifests/crds/ from api/ (the test tier checks they are current).
crds: build
	$(BUILD)/tools/kft-gen-crds manifests/crds

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

check-format:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

# libFuzzer targets (clang): `make fuzz-run FUZZER=fuzz_decode SECONDS=600`.
FUZZER  ?= fuzz_validate
SECONDS ?= 60
fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DKFT_FUZZ=ON -DKFT_TESTS=OFF
	cmake --build build-fuzz -j$(JOBS)

fuzz-run: fuzz
	mkdir -p build-fuzz/corpus/$(FUZZER)
	build-fuzz/fuzz/$(FUZZER) -max_total_time=$(SECONDS) -print_final_stats=1 \
		build-fuzz/corpus/$(FUZZER) tests/fuzz/corpus/$(FUZZER)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

demo: build
	@echo "The local backend (issue 4) is not built yet; 'make demo' will run examples/ once it is."
	$(BUILD)/bin/kftrainer validate manifests/

clean:
	rm -rf $(BUILD) build-fuzz
