# kftrainer - front door. `make` builds, `make test` runs every test tier this
# machine can run, `make demo` runs the main example. Each target installs the
# system dependencies first when something is missing (scripts/install-deps.sh).
BUILD      ?= build
PREFIX     ?= /usr/local
JOBS       ?= 2
CMAKE_ARGS ?=

.PHONY: all deps configure build test unit bench bench-ui check-format format crds fuzz fuzz-run \
        install demo demo-deps clean bench-controller test-frameworks bench-sdk bench-hpo python ui \
        test-llm bench-llm

all: build

deps:
	@scripts/install-deps.sh --check >/dev/null 2>&1 || scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

# A tree first configured by `make demo` has no slim libcurl; once `deps` has built it, CMake is
# asked again so the controller links it.
build: deps configure
	@p=$$(scripts/install-deps.sh --slim-curl-prefix); \
	if [ -n "$$p" ] && [ "$$p/lib/libcurl.a" -nt $(BUILD)/CMakeCache.txt ]; then \
		cmake -S . -B $(BUILD) >/dev/null; fi
	cmake --build $(BUILD) -j$(JOBS)

# Every tier in one ctest run, so the closing line is ctest's summary.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -L 'unit|asan'

# Benchmarks print figures (median, p10, p90); they never fail on time.
bench: build
	$(BUILD)/bench/bench_render
	$(BUILD)/bench/bench_local

# The controller bench: 1,000 TrainJobs in a burst on the cluster tier's full-mode cluster,
# ours beside upstream v2.3.0 built from its Go module (docs/deploy.md).
bench-controller: build
	KFT_BUILD_DIR=$(abspath $(BUILD)) bench/controller/run

# The dashboard: its jobs API over 1,000 TrainJobs and a 100 MiB log through its logs endpoint.
bench-ui: build
	KFT_BUILD_DIR=$(abspath $(BUILD)) bench/ui/run

# Hyperparameter search on the local engine: per-trial overhead over 20 trials, and the search's
# wall time against the same trials run one by one by `kftrainer train` from a shell script.
bench-hpo: build
	KFT_BUILD_DIR=$(abspath $(BUILD)) bench/hpo/run

# Real torch from PyPI (about 3 GB, downloaded once) through kftrainer.TrainerClient: a 2-node x
# 2-process gloo DDP job (tests/frameworks). Not part of `make test`.
test-frameworks: build
	KFT_BUILD_DIR=$(abspath $(BUILD)) tests/frameworks/run-tier

# Real torchtune (the pinned set, some GB from PyPI, cached in build/) fine-tunes a generated
# Llama 3.2 1B checkpoint through kftrainer.TrainerClient and `kftrainer train -f`, on CPU:
# LoRA, and full where memory allows (tests/llm). `make test` runs its fast variant.
test-llm: build
	KFT_BUILD_DIR=$(abspath $(BUILD)) tests/llm/run-tier

# The same torchtune LoRA fine-tune through kftrainer.TrainerClient and `tune run` by hand:
# tokens per second and time to the first step (bench/llm; the llm tier's environment).
bench-llm: build
	KFT_BUILD_DIR=$(abspath $(BUILD)) bench/llm/run

# train() to the function's first line: kftrainer's SDK backend, upstream's LocalProcessBackend
# and `kftrainer train`, in one run (bench/sdk; the frameworks tier's environment).
bench-sdk: build
	KFT_BUILD_DIR=$(abspath $(BUILD)) bench/sdk/run

# The Python package into the current environment (pip; builds the engine with CMake).
python: deps
	python3 -m pip install .

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

# The data-parallel example (examples/local/data-parallel), 2 nodes x 2 processes on this
# machine, from a fresh state directory; its processes start in the example's directory.
# The first command a newcomer runs builds only what it runs: the CLI, over the system's
# libraries (no slim libcurl for the controller, so no Debian source package and no deb-src
# entry in the apt sources). `make build` and `make test` still build everything.
DEMO_STATE ?= $(BUILD)/demo-state
DEMO_ENV    = KFTRAINER_STATE_DIR=$(abspath $(DEMO_STATE)) KFTRAINER_RUNTIMES=$(CURDIR)/manifests/runtimes
demo-deps:
	@KFT_SLIM_CURL=off KFT_BROWSER=off scripts/install-deps.sh --check >/dev/null 2>&1 || \
		KFT_SLIM_CURL=off KFT_BROWSER=off scripts/install-deps.sh

demo: demo-deps
	@[ -f $(BUILD)/CMakeCache.txt ] || \
		cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)
	cmake --build $(BUILD) --target kftrainer-cli -j$(JOBS)
	rm -rf $(DEMO_STATE)
	cd examples/local/data-parallel && \
		$(DEMO_ENV) $(abspath $(BUILD))/bin/kftrainer train -f trainjob.yaml --follow
	$(DEMO_ENV) $(BUILD)/bin/kftrainer get
	@echo
	@echo "Look further with: $(BUILD)/bin/kftrainer --state-dir $(DEMO_STATE) get data-parallel -o yaml"
	@echo "                   $(BUILD)/bin/kftrainer --state-dir $(DEMO_STATE) logs data-parallel --node 1"
	@echo "The dashboard:     make ui UI_STATE=$(DEMO_STATE)   (then open http://$(UI_LISTEN)/)"

# The dashboard (docs/ui.md) over a state directory (default: yours, as every verb uses it),
# with the checkout's runtimes; Ctrl-C stops it. UI_LISTEN other than loopback needs a token,
# which it prints in the address.
UI_LISTEN ?= 127.0.0.1:8265
UI_STATE  ?=
ui: demo-deps
	@[ -f $(BUILD)/CMakeCache.txt ] || \
		cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)
	cmake --build $(BUILD) --target kftrainer-cli -j$(JOBS)
	KFTRAINER_RUNTIMES=$(CURDIR)/manifests/runtimes $(BUILD)/bin/kftrainer \
		$(if $(UI_STATE),--state-dir $(UI_STATE)) ui --listen $(UI_LISTEN)

clean:
	rm -rf $(BUILD) build-fuzz
