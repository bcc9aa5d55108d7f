# loadlab front door. `make demo` and `make test` do all set-up on a fresh Debian 12 machine.
BUILD_DIR ?= build
JOBS ?= 2
# Extra cmake arguments for a tree configured here, e.g. -DLOADLAB_UNITY_BUILD=OFF; the trees
# themselves are CMakePresets.json's (docs/development.md, "Build options").
CMAKE_FLAGS ?=

# What `make demo` needs: the compilers and the libraries of the four programs, nothing else
# (golang-github-google-pprof-dev: pprof's profile.proto, which the controller writes profiles in).
BUILD_PACKAGES := build-essential cmake ninja-build pkg-config ccache lld \
	libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
	libboost-dev libspdlog-dev nlohmann-json3-dev libcli11-dev \
	libsqlite3-dev libssl-dev zlib1g-dev libnghttp2-dev \
	libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev \
	golang-github-google-pprof-dev
# What `make test` adds: GoogleTest, and the tools and peers the tests run.
# python3: the catalog target of tests/process/integration/catalog_target_test.cpp (standard library only).
# dpkg-dev, file: cpack's dpkg-shlibdeps (the Depends of the .deb packages, tests/deploy).
# nghttp2-server: nghttpd, the independent HTTP/2 server of tests/process/load_generator/h2_load_test.cpp.
# ngtcp2-server, ngtcp2-client: gtlsserver and gtlsclient, the independent HTTP/3 peers of the
# load generator's and the target's h3 tests.
# python3-yaml: tests/deploy/k8s_manifests_test.py parses the manifests of deploy/k8s.
# git: the scenario repository of tests/process/integration/scenario_folder_test.cpp and of loadlab-nightly,
# and the source repository (built with build-essential's make and cc) of built_target_test.cpp.
# prometheus (promtool), python3-prometheus-client (a strict OpenMetrics parser):
# tests/process/integration/metrics_test.cpp checks the metrics the agent and the controller serve and
# deploy/monitoring's Prometheus config.
# chromium, python3-jsonschema, python3-pil: tests/process/integration/report_test.cpp renders report.html
# headless and checks its screenshots, and validates result.json against docs/result.schema.json.
# valgrind: tests/timing/integration/instructions_test.cpp counts instructions per request under callgrind.
# python3-junitparser: tests/process/integration/cli_test.cpp reads back the JUnit file of --junit.
# linux-perf: tests/process/agent/profiler_test.cpp profiles a process of known split with perf.
TEST_PACKAGES := libgtest-dev libgmock-dev iproute2 clang-format \
	wrk hey nghttp2-client nghttp2-server ngtcp2-client ngtcp2-server python3 python3-jsonschema python3-pil python3-yaml chromium dpkg-dev file git \
	prometheus python3-prometheus-client valgrind python3-junitparser linux-perf

DEB_PACKAGES := $(BUILD_PACKAGES) $(TEST_PACKAGES)
# The programs `make demo` builds: the controller, the agent, and the plain HTTP target and load
# worker (its tree leaves out their TLS and HTTP/3 siblings, LOADLAB_BUILD_SIBLINGS=OFF).
DEMO_PROGRAMS := loadlab loadlab-agent loadlab-target loadlab-load
# Every program `make programs` builds: those and the siblings (`make build` builds every target:
# tests, fuzz corpora, benches).
PROGRAMS := $(DEMO_PROGRAMS) loadlab-target-secure loadlab-target-h3 loadlab-load-secure loadlab-load-h3

.PHONY: all check deps deps-demo check-deps check-deps-demo test-containers-deps check-containers-deps build programs demo test test-containers sanitize sanitize-asan sanitize-tsan format format-check clean

all: build

# `make deps` (every package) and `make deps-demo` (the build's) install what is missing, with
# apt-get as root or through sudo. The build steps only check: with packages missing they ask on a
# terminal, and without one print the `make deps` command and stop (cmake/debian_packages.sh;
# `make deps test` installs first, LOADLAB_INSTALL=yes answers yes).
PACKAGES_SH := cmake/debian_packages.sh
deps:
	@$(PACKAGES_SH) install $(DEB_PACKAGES)

deps-demo:
	@$(PACKAGES_SH) install $(BUILD_PACKAGES)

check-deps:
	@$(PACKAGES_SH) require deps $(DEB_PACKAGES)

check-deps-demo:
	@$(PACKAGES_SH) require deps-demo $(BUILD_PACKAGES)

# A tree is configured with its tests (BUILD_TESTING) unless `make demo` made it, without them
# (GoogleTest is not installed for the demo); `make build` turns them on again.
$(BUILD_DIR)/build.ninja:
	cmake --preset release -B $(BUILD_DIR) $(CMAKE_FLAGS)

build: check-deps $(BUILD_DIR)/build.ninja
	@if grep -q '^BUILD_TESTING:BOOL=OFF' $(BUILD_DIR)/CMakeCache.txt; then \
	    cmake $(BUILD_DIR) -DBUILD_TESTING=ON -DLOADLAB_BUILD_SIBLINGS=ON; fi
	cmake --build $(BUILD_DIR) -j$(JOBS)

# A tree without tests, unless one is configured already (a tree `make build` configured keeps
# its tests).
define configure_programs
	@test -f $(BUILD_DIR)/build.ninja || \
	    cmake --preset demo -B $(BUILD_DIR) $(CMAKE_FLAGS)
endef

programs: check-deps-demo
	$(configure_programs)
	cmake --build $(BUILD_DIR) -j$(JOBS) --target $(PROGRAMS)

demo: check-deps-demo
	$(configure_programs)
	cmake --build $(BUILD_DIR) -j$(JOBS) --target $(DEMO_PROGRAMS)
	$(BUILD_DIR)/bin/loadlab run scenarios/demo.json --out $(BUILD_DIR)/demo-$$(date -u +%Y%m%dT%H%M%SZ)

# Every test, one at a time; then each tier's count of passed and skipped tests and each skip's
# reason (tests/tiers.py; the tiers: tests/CMakeLists.txt).
JUNIT = $(abspath $(BUILD_DIR))/Testing/ctest-junit.xml
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j1 --output-junit $(JUNIT); rc=$$?; \
	    python3 $(CURDIR)/tests/tiers.py . $(JUNIT); exit $$rc

# The fast tier (pure logic) in parallel: after an incremental build, well under a minute.
CHECK_JOBS ?= $(shell nproc)
check: build
	@cd $(BUILD_DIR) && ctest -L '^fast$$' -j$(CHECK_JOBS) --output-on-failure --output-junit $(JUNIT); rc=$$?; \
	    python3 $(CURDIR)/tests/tiers.py . $(JUNIT); exit $$rc

# deploy/k8s played for real (tests/deploy/k8s_play_test.py): the images made from this build's
# .debs on a debootstrap of Debian 12, the DaemonSet's and the CronJob's pod templates played
# with podman kube play. Root; not part of `make test` (CI time). podman reads the project's
# deploy/containers/containers.conf (runc, which hybrid cgroups need; cgroupfs), not /etc's,
# unless CONTAINERS_CONF names another; `make test-containers-deps` installs podman and the rest.
CONTAINER_PACKAGES := podman runc debootstrap iproute2 git python3-yaml dpkg-dev file
CONTAINERS_CONF ?= $(CURDIR)/deploy/containers/containers.conf
test-containers-deps:
	@$(PACKAGES_SH) install $(CONTAINER_PACKAGES)

check-containers-deps:
	@$(PACKAGES_SH) require test-containers-deps $(CONTAINER_PACKAGES)

test-containers: check-containers-deps programs
	CONTAINERS_CONF=$(CONTAINERS_CONF) python3 tests/deploy/k8s_play_test.py --build-dir $(BUILD_DIR)

# Sanitizer runs (docs/sanitize.md; too long for CI). One tree per sanitizer, built with
# LOADLAB_SANITIZE. A list names test executables, which are also their tests' ctest labels:
# ASan+UBSan run every unit test, TSan the agent's and controller's unit tests and the
# integration tests (whose agents, targets and load workers are then built with TSan too).
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
SANITIZE_JOBS ?= 1
ASAN_TESTS := shared_test proto_test agent_test target_test load_test clients_test controller_test
TSAN_TESTS := agent_test controller_test integration_test
# Tests too bound to timing for a build 2-15x slower; left out here, not weakened (ctest -E).
# DelayDoesNotBlockTheIoThread asserts a throughput (> 1600 requests/s) that ASan's target
# does not reach (about 1500).
ASAN_EXCLUDE := ^TargetServer\.DelayDoesNotBlockTheIoThread$$
# Under TSan: EmbeddedAgentMatrixMatchesGroundTruth and TwoLoadAgentsShareACellAndTheirCountsAdd
# assert a cell's rate (2000 requests/s within 10 % and 20 %) that TSan's target and load
# worker do not keep (about 1600); AChildHolding200MiBAndMapping100MiBOfAFileMeasuresBoth compares a
# child's RSS with its 300 MiB, and TSan's shadow memory is RSS too (about 1 GiB).
TSAN_EXCLUDE := ^RunTest\.EmbeddedAgentMatrixMatchesGroundTruth$$|^LabTest\.TwoLoadAgentsShareACellAndTheirCountsAdd$$|AgentTruthTest\.AChildHolding200MiBAndMapping100MiBOfAFileMeasuresBoth
# Reports go to files, whichever process wrote them (a child's stderr is its agent's to keep).
SUPP := $(CURDIR)/tests/sanitize
ASAN_ENV := ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:log_path=$(CURDIR)/$(ASAN_DIR)/sanitizer-logs/asan \
	LSAN_OPTIONS=suppressions=$(SUPP)/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(ASAN_DIR)/sanitizer-logs/ubsan
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(SUPP)/tsan.supp:log_path=$(CURDIR)/$(TSAN_DIR)/sanitizer-logs/tsan
empty :=
labels = '^($(subst $(empty) $(empty),|,$(strip $(1))))$$'

# $(call sanitized_ctest,DIR,TESTS,EXCLUDE,ENV): the tests on one sanitized tree; fails on a
# failed test and on any report.
define sanitized_ctest
	rm -rf $(1)/sanitizer-logs && mkdir -p $(1)/sanitizer-logs
	cd $(1) && $(4) ctest --output-on-failure -j1 -L $(call labels,$(2)) $(if $(3),-E '$(3)'); \
	rc=$$?; for f in sanitizer-logs/*; do [ -e "$$f" ] && { echo "== $$f"; cat "$$f"; rc=1; }; done; exit $$rc
endef

sanitize: sanitize-asan sanitize-tsan

sanitize-asan: check-deps
	cmake --preset asan -B $(ASAN_DIR) $(CMAKE_FLAGS)
	nice -n 10 cmake --build $(ASAN_DIR) -j$(SANITIZE_JOBS) --target $(ASAN_TESTS)
	$(call sanitized_ctest,$(ASAN_DIR),$(ASAN_TESTS),$(ASAN_EXCLUDE),$(ASAN_ENV))

sanitize-tsan: check-deps
	cmake --preset tsan -B $(TSAN_DIR) $(CMAKE_FLAGS)
	nice -n 10 cmake --build $(TSAN_DIR) -j$(SANITIZE_JOBS) --target $(TSAN_TESTS)
	$(call sanitized_ctest,$(TSAN_DIR),$(TSAN_TESTS),$(TSAN_EXCLUDE),$(TSAN_ENV))

# The whole tree follows .clang-format (Debian 12's clang-format 14); CI checks it.
SOURCES = $$(git ls-files '*.cpp' '*.hpp')
format: check-deps
	clang-format -i $(SOURCES)

format-check: check-deps
	@clang-format --dry-run --Werror $(SOURCES) && echo "format-check: every source file follows .clang-format"

clean:
	rm -rf $(BUILD_DIR)
