# trick-arena: `make demo` and `make test` are all a fresh machine needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BENCH_VENV  := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

BUF_STAMP := tools/buf/node_modules/.installed

.PHONY: demo test lint bench proto clean cpp-bot go-bot java-bot sample-protos

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@# Ray (about 80 MB) for tests/test_ray.py, which skips and says why where it cannot install
	$(BIN)/pip install -q -e '.[ray]' || echo "note: ray could not be installed: tests/test_ray.py skips"
	touch $(STAMP)

NODE_BOT := sample_bots/node/node_modules/.installed

# The Node.js sample bot takes part where node and npm are installed.
$(NODE_BOT): sample_bots/node/package-lock.json
	if command -v npm >/dev/null; then npm ci --prefix sample_bots/node --no-audit --no-fund --loglevel=error && touch $(NODE_BOT); \
	else echo "npm not found: the Node.js sample bot is left out"; fi

# The C++ sample bot (needs cmake, g++, pkg-config, libgrpc++-dev, protobuf-compiler-grpc);
# tests/test_cpp_bot.py builds it the same way. The build folder is not in git.
CPP_BUILD := sample_bots/cpp/build
cpp-bot:
	cmake -S sample_bots/cpp -B $(CPP_BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(CPP_BUILD) -j2

# The Go and Java sample bots, each built by the Makefile in its folder, offline from
# Debian's packages (listed in sample_bots/go/README.md and sample_bots/java/README.md);
# tests/test_go_bot.py and tests/test_java_bot.py build them the same way. Their build
# folders are not in git.
go-bot:
	$(MAKE) -C sample_bots/go

java-bot:
	$(MAKE) -C sample_bots/java

# Each sample bot that reads or compiles the protocol carries its own copy of proto/, so
# its folder works wherever it is copied and inside the sandbox (which shows a bot only
# its own folder). This refreshes the copies; tests/test_sample_bots.py fails when one
# differs from proto/.
SAMPLE_PROTOS := sample_bots/node sample_bots/cpp sample_bots/go sample_bots/java sample_bots/ruby
sample-protos:
	for sample in $(SAMPLE_PROTOS); do \
		rm -rf $$sample/proto/arena && mkdir -p $$sample/proto/arena && \
		cp -R proto/arena/v1 $$sample/proto/arena/ || exit 1; \
	done

# Bot processes run under bubblewrap (Debian's bubblewrap package). As root with apt-get
# it is installed here; elsewhere the arena says which package is missing.
BWRAP := /usr/bin/bwrap
$(BWRAP):
	@if command -v bwrap >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }; \
	else echo "bubblewrap is not installed: install the 'bubblewrap' package (bots run in its sandbox)"; fi

# As root, each bot process mounts the shared folders of its view from images of its own
# (arena/proc/images.py), made with mkfs.erofs (Debian's erofs-utils): installed here as
# root with apt-get; without it the folders are bound from the host, and the arena says so.
MKFS_EROFS := /usr/bin/mkfs.erofs
$(MKFS_EROFS):
	@if command -v mkfs.erofs >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq erofs-utils >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq erofs-utils >/dev/null; }; \
	fi

demo: $(STAMP) $(NODE_BOT) $(BWRAP) $(MKFS_EROFS)
	$(BIN)/arena tournament tournaments/demo.toml --fresh
	$(BIN)/arena publish out/demo --out out/demo-site
	@echo "The demo's site: open out/demo-site/index.html in a browser, or run: $(BIN)/arena serve out/demo-site"

# The suite runs on pytest-xdist workers, a test file to a worker (its module fixtures,
# such as a played tournament, are then made once), one more worker than cores: a test
# that waits on a bot's clock or a process's end leaves its core to the extra worker.
# The files go in the order collected, the longest first (tests/conftest.py: HEAVY_FIRST),
# which xdist would otherwise replace by the number of tests in each file
# (docs/architecture.md, "The test suite's cost"). `make test WORKERS=0` runs it in this
# process.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: $(STAMP) $(NODE_BOT) $(BUF_STAMP) $(BWRAP) $(MKFS_EROFS)
	$(BIN)/pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder --durations=15

# Buf (the .proto linter) comes from npm; without node the proto lint is skipped.
$(BUF_STAMP): tools/buf/package-lock.json
	if command -v npm >/dev/null; then npm ci --prefix tools/buf --no-audit --no-fund && touch $(BUF_STAMP); \
	else echo "npm not found: Buf lint of proto/ skipped"; fi

lint: $(STAMP) $(BUF_STAMP)
	$(BIN)/ruff check arena tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m arena._genproto --check
	if [ -f $(BUF_STAMP) ]; then cd tools/buf && npx --no -- buf lint ../..; fi

proto: $(STAMP) sample-protos
	$(BIN)/python -m arena._genproto

# The benchmark compares with OpenSpiel, which is not a runtime dependency: it gets a
# virtual environment of its own.
$(BENCH_STAMP): pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_VENV)/bin/pip install -q -e '.[bench,ray]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python -m benchmarks

clean:
	rm -rf $(VENV) $(BENCH_VENV) build *.egg-info test-artifacts $(CPP_BUILD) \
		sample_bots/go/build sample_bots/java/build
