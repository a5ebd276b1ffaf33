# mcp-chain — common tasks. `make help` lists them.

CARGO ?= cargo
BIN   := target/debug/mcp-chain

.PHONY: static help build run test test-rust test-interop check-platforms ci fmt fmt-check lint clean fuzz soak bench

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build mcp-chain, the demo server and the test fixtures
	$(CARGO) build --workspace --bins

run: build ## The main job: a scripted session through the demo chain, answers shown by jq
	@echo "# mcp-chain --config config/demo.toml < config/demo-session.jsonl | jq -c ." >&2
	@$(BIN) --config config/demo.toml < config/demo-session.jsonl | jq -c .

test: test-rust test-interop ## All tests: unit, integration, and real MCP software

test-rust: ## Unit and integration tests (Rust only)
	$(CARGO) test --workspace

test-interop: build ## Interop with official SDK clients and reference servers (installs them, pinned)
	@if [ -x tests/interop/run.sh ]; then tests/interop/run.sh; else echo "no interop suite"; fi

static: ## The static (musl) release build the container image holds (tests/interop/test_container.py)
	CC_x86_64_unknown_linux_musl=musl-gcc $(CARGO) build --release --target x86_64-unknown-linux-musl --bin mcp-chain

check-platforms: ## Windows (cross-compiled, clippy, unit tests and a session under Wine) and macOS (check, clippy)
	tests/platforms/windows/smoke.sh
	tests/platforms/macos.sh

ci: fmt-check lint test ## What CI runs: formatting, clippy with warnings denied, all tests

fmt: ## Format the code
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all --check

lint: ## clippy, warnings denied
	$(CARGO) clippy --workspace --all-targets -- -D warnings

bench: ## Benchmark: direct vs byte relay vs mcp-chain (empty, full chain), release build; BENCH_ARGS=--quick
	$(CARGO) build --release --workspace
	target/release/mcp-chain-bench $(BENCH_ARGS)

clean:
	$(CARGO) clean

# Fuzzing: cargo-fuzz on the stable toolchain (RUSTC_BOOTSTRAP=1 unlocks the
# -Z flags it needs); fuzz/ is a Cargo project of its own. Each target runs
# FUZZ_SECONDS, FUZZ_JOBS at a time; crashes land in fuzz/artifacts/.
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
CARGO_FUZZ_VERSION := 0.13.1

fuzz: ## Run every fuzz target for FUZZ_SECONDS each (default 60; installs cargo-fuzz, pinned)
	@cargo fuzz --version 2>/dev/null | grep -q " $(CARGO_FUZZ_VERSION)" || \
		$(CARGO) install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) fuzz/run.sh

# Soak: SOAK_MESSAGES through the release build with every layer in the chain.
SOAK_MESSAGES ?= 1000000

soak: ## A million messages through the full chain: no loss, flat RSS (release build)
	$(CARGO) build --release --bin mcp-chain --bin fake-mcp-server
	$(CARGO) build --release --manifest-path soak/Cargo.toml
	soak/target/release/mcp-chain-soak --messages $(SOAK_MESSAGES)
