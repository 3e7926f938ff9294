# Sovaria: one command to test, one to benchmark.
#   make test   installs the missing system libraries, builds and runs every test (the library's,
#               then the Benchmarks package's)
#   make bench  builds sovaria-bench in release and runs it (about two minutes; bench-full: the full run)
#   make reliability  the long fault battery (power cuts, I/O errors, kills; docs/RELIABILITY.md)
#   make lint   checks formatting with the committed .swift-format, that Linux-only calls are guarded,
#               that no package type has an @inlinable member (another module would not inline it),
#               and that no test releases its TemporaryFolder at once (its folder would stay behind)

SWIFT ?= $(shell command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)
DEB_PACKAGES := libsqlite3-dev liblmdb-dev libleveldb-dev libsodium-dev libpq-dev postgresql python3-psycopg strace tmux e2fsprogs zstd
BREW_PACKAGES := sqlite lmdb leveldb libsodium libpq postgresql@15
BENCH_ARGS ?=
# The benchmarks are a package of their own (Benchmarks/Package.swift, its build in Benchmarks/.build).
BENCH_PACKAGE := --package-path Benchmarks

.PHONY: test bench bench-full bench-quick c-baseline reliability lint format deps build docs demo

# The C programs first: the workload tests run the C trace replayer beside the Swift stores.
# The DocC catalogs' snippets are type-checked; the README's Swift blocks are built and run as the
# one program they are, in a package made from the README's manifest (.build/readme-program).
# Then the Benchmarks package's tests (the workloads, the trace reader, the bench's quick run), and
# the test server's own check, which covers the change feed's SQL (Tests/Server/selftest.py).
test: deps c-baseline
	$(SWIFT) build --build-tests
	$(SWIFT) build --build-tests $(BENCH_PACKAGE)
	python3 Tests/DocSnippets/check-snippets.py .build/debug
	SWIFT=$(SWIFT) python3 Tests/DocSnippets/check-readme-program.py .build
	$(SWIFT) test --skip-build
	$(SWIFT) test --skip-build $(BENCH_PACKAGE)
	python3 Tests/Server/selftest.py

# The long fault battery (docs/RELIABILITY.md): the same tests `make test` runs in a short
# version, with SOVARIA_RELIABILITY=full for their full trial counts (power cuts, I/O errors,
# kills): a few minutes per engine. Needs root (loop mounts, tmpfs, strace).
reliability: deps
	$(SWIFT) build --build-tests
	SOVARIA_RELIABILITY=full $(SWIFT) test --skip-build --filter 'SovariaFaultTests|SovariaCrashTests|MigrateCommandTests|PostgresFailoverTests|FailoverSyncTests'

# SwiftPM keeps the release build's plan (Benchmarks/.build/release.yaml) and may not see a source
# file added to the library since it was written: the bench would then run without it. Each bench
# target plans the build again.
BENCH_REPLAN := rm -f Benchmarks/.build/release.yaml

bench: deps c-baseline
	$(BENCH_REPLAN)
	$(SWIFT) build -c release $(BENCH_PACKAGE) --product sovaria-bench
	$(SWIFT) run -c release --skip-build $(BENCH_PACKAGE) sovaria-bench --c-baseline $(abspath $(C_BASELINE)) $(BENCH_ARGS)

# The full run (100,000 keys, 5 repeats, the full section workloads) the tables in docs/bench come
# from: tens of minutes.
bench-full: deps c-baseline
	$(BENCH_REPLAN)
	$(SWIFT) build -c release $(BENCH_PACKAGE) --product sovaria-bench
	$(SWIFT) run -c release --skip-build $(BENCH_PACKAGE) sovaria-bench --full --c-baseline $(abspath $(C_BASELINE)) $(BENCH_ARGS)

bench-quick: deps c-baseline
	$(BENCH_REPLAN)
	$(SWIFT) run -c release $(BENCH_PACKAGE) sovaria-bench --quick --c-baseline $(abspath $(C_BASELINE)) $(BENCH_ARGS)

# The C baseline the bench compares each engine with (Benchmarks/c-baseline): the system C
# compiler, libraries from pkg-config where it knows them (Debian ships no .pc for LevelDB). A
# failed build does not stop the bench: it says the program is missing and goes on without it.
C_BASELINE ?= .build/sovaria-c-baseline
C_BASELINE_LIBS := $(shell pkg-config --cflags --libs sqlite3 lmdb libsodium libpq 2>/dev/null || echo -I/usr/include/postgresql -lsqlite3 -llmdb -lsodium -lpq) -lleveldb -lm
# The trace replayer (issue 36): replays a .sovtrace on SQLite, LMDB or LevelDB in C.
C_REPLAY ?= .build/sovaria-c-replay
C_REPLAY_LIBS := $(shell pkg-config --cflags --libs sqlite3 lmdb 2>/dev/null || echo -lsqlite3 -llmdb) -lleveldb -lm

c-baseline:
	@mkdir -p $(dir $(C_BASELINE)) $(dir $(C_REPLAY))
	$(CC) -O2 -std=c11 -Wall -o $(C_BASELINE) Benchmarks/c-baseline/sovaria_c_baseline.c $(C_BASELINE_LIBS) \
		|| { rm -f $(C_BASELINE); echo "The C baseline did not build: sovaria-bench runs without it"; }
	$(CC) -O2 -std=c11 -Wall -o $(C_REPLAY) Benchmarks/c-baseline/sovaria_c_replay.c $(C_REPLAY_LIBS) \
		|| { rm -f $(C_REPLAY); echo "The C trace replayer did not build: sovaria-bench replays without it"; }

build: deps
	$(SWIFT) build

# The offline story end to end: a notes app writes while the server is down, then syncs to
# PostgreSQL behind Tests/Server/restserver.py and shows a refused write kept; then two devices: an
# edit of a deleted note kept as rejected, and a versioned task's conflict resolved (Examples/demo.sh).
demo: deps
	$(SWIFT) build --product sovaria-notes
	Examples/demo.sh "$$($(SWIFT) build --show-bin-path)/sovaria-notes"

# The DocC documentation of every library module, in .build/docs/<Module> (swift-docc-plugin
# cannot be a dependency, so no `swift package generate-documentation`): builds the libraries in
# their own scratch folder, so the extra compiler flags do not rebuild the one `make test` uses,
# emitting their symbol graphs, then converts each catalog with its module's graphs. With
# `DOCC_FLAGS=--warnings-as-errors` it fails on any warning, an unresolved link included.
DOCC ?= $(shell command -v docc 2>/dev/null || { command -v xcrun >/dev/null 2>&1 && echo xcrun docc; } || echo /opt/swift/usr/bin/docc)
DOCS_SCRATCH ?= .build/docs-scratch
DOCS_SYMBOLS ?= .build/docs-symbols
DOCC_FLAGS ?=
DOC_MODULES := Sovaria SovariaCache SovariaQueue SovariaSync SovariaPostgREST SovariaHTTP SovariaFiles SovariaObjects \
	SovariaSodium \
	SovariaSQLite SovariaLMDB SovariaLevelDB SovariaPostgres SovariaTestKit

docs:
	mkdir -p $(DOCS_SYMBOLS)  # kept: a module the build finds up to date emits no new graph
	set -e; for module in $(DOC_MODULES); do \
		$(SWIFT) build --scratch-path $(DOCS_SCRATCH) --target $$module \
			-Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc $(abspath $(DOCS_SYMBOLS)); \
	done
	rm -rf .build/docs && mkdir -p .build/docs
	set -e; for module in $(DOC_MODULES); do \
		rm -rf $(DOCS_SYMBOLS)/$$module && mkdir -p $(DOCS_SYMBOLS)/$$module; \
		cp $(DOCS_SYMBOLS)/$$module.symbols.json $(DOCS_SYMBOLS)/$$module@*.symbols.json $(DOCS_SYMBOLS)/$$module/ 2>/dev/null || \
			cp $(DOCS_SYMBOLS)/$$module.symbols.json $(DOCS_SYMBOLS)/$$module/; \
		echo "docs: $$module"; \
		$(DOCC) convert Sources/$$module/$$module.docc --additional-symbol-graph-dir $(DOCS_SYMBOLS)/$$module \
			--fallback-display-name $$module --fallback-bundle-identifier org.sovaria.$$module \
			--output-path .build/docs/$$module $(DOCC_FLAGS); \
	done

# Formatting, then Linux-only calls (a /proc or /sys path, Glibc, a Glibc-only function) outside an
# `#if os(Linux)` / `#if canImport(Glibc)`: Apple platforms must still compile (the check's own
# tests first).
lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Examples Package.swift \
		Benchmarks/Package.swift Benchmarks/sovaria-bench Benchmarks/SovariaWorkloads Benchmarks/Tests
	python3 Tests/Lint/test_linux_only_calls.py
	python3 Tests/Lint/linux-only-calls.py Sources Benchmarks
	python3 Tests/Lint/test_inlinable_in_package_types.py
	python3 Tests/Lint/inlinable-in-package-types.py Sources
	python3 Tests/Lint/test_released_temporary_folders.py
	python3 Tests/Lint/released-temporary-folders.py Sources Tests Benchmarks/Tests

format:
	$(SWIFT) format format --in-place --recursive Sources Tests Examples Package.swift \
		Benchmarks/Package.swift Benchmarks/sovaria-bench Benchmarks/SovariaWorkloads Benchmarks/Tests

# Installs the Debian/Ubuntu -dev packages that are missing when run as root; otherwise prints
# the command to run (apt or brew) and stops.
deps:
	@if [ "$$(uname)" = "Darwin" ]; then \
		missing=""; for p in $(BREW_PACKAGES); do brew list --versions $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
		if [ -n "$$missing" ]; then echo "Missing system libraries. Run: brew install$$missing"; exit 1; fi; \
	elif command -v dpkg-query >/dev/null 2>&1; then \
		missing=""; for p in $(DEB_PACKAGES); do \
			dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
		if [ -n "$$missing" ]; then \
			if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
				echo "Installing$$missing"; \
				apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing; \
			else \
				echo "Missing system libraries. Run: sudo apt-get install -y$$missing"; exit 1; \
			fi; \
		fi; \
	else \
		echo "Install the development files of SQLite, LMDB, LevelDB, libsodium and libpq, and PostgreSQL, with your package manager."; \
	fi
