# loadlab front door. `make demo` and `make test` do all set-up on a fresh Debian 12 machine.
BUILD_DIR ?= build
JOBS ?= 2
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

# python3: the catalog target of tests/integration/catalog_target_test.cpp (standard library only).
# dpkg-dev, file: cpack's dpkg-shlibdeps (the Depends of the .deb packages, tests/deploy).
# chromium, python3-jsonschema, python3-pil: tests/integration/report_test.cpp renders report.html
# headless and checks its screenshots, and validates result.json against docs/result.schema.json.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config ccache \
	libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
	libboost-dev libspdlog-dev nlohmann-json3-dev libcli11-dev \
	libgtest-dev libgmock-dev libsqlite3-dev libssl-dev iproute2 clang-format \
	wrk hey nghttp2-client python3 python3-jsonschema python3-pil chromium dpkg-dev file

.PHONY: all deps build demo test format format-check clean

all: build

# Installs the Debian packages that are missing (apt-get as root; otherwise prints the command).
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all packages present"; \
	elif [ "$$(id -u)" = 0 ]; then \
	    echo "deps: installing $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else \
	    echo "deps: missing packages; run:"; echo "  sudo apt-get install -y $$missing"; exit 1; \
	fi

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j$(JOBS)

demo: build
	$(BUILD_DIR)/bin/loadlab run scenarios/demo.json --out $(BUILD_DIR)/demo-$$(date -u +%Y%m%dT%H%M%SZ)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j1

# The whole tree follows .clang-format (Debian 12's clang-format 14); CI checks it.
SOURCES = $$(git ls-files '*.cpp' '*.hpp')
format: deps
	clang-format -i $(SOURCES)

format-check: deps
	@clang-format --dry-run --Werror $(SOURCES) && echo "format-check: every source file follows .clang-format"

clean:
	rm -rf $(BUILD_DIR)
