# kasoku — two commands:  make demo   (build, install into .venv, run the demo)
#                         make test   (build from scratch, C++ tests with CTest, Python tests with pytest)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CMAKE  := $(VENV)/bin/cmake
BUILD  := build/cpp
PREFIX := $(CURDIR)/build/install
JOBS   ?= $(shell nproc)
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEB    := g++ libssl-dev libgtest-dev libgmp-dev libbenchmark-dev libsimde-dev nlohmann-json3-dev

.PHONY: demo test deps venv install cpp-test example py-test bench peers clean

demo: install
	$(PY) -m kasoku demo

test: cpp-test example py-test

# Debian packages the build needs (OpenSSL, GoogleTest, GMP for big-integer references, Google Benchmark, SIMDe,
# nlohmann-json for the scheduler's cost-model files).
deps:
	@missing=""; for p in $(DEB); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi

# Python tools from PyPI into .venv (CMake, Ninja, nanobind, scikit-build-core, NumPy, pytest, matplotlib).
$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "cmake>=3.20" ninja "nanobind>=2.4,<4" "scikit-build-core>=0.10" "numpy>=1.24" "pytest>=7" "matplotlib>=3.6" "mypy>=1.8"
	touch $@

venv: $(VENV)/.ready

install: deps venv
	$(PY) -m pip install -q --no-build-isolation .

cpp-test: deps venv
	$(CMAKE) -S . -B $(BUILD) -G Ninja -DKASOKU_BUILD_TESTS=ON -DKASOKU_BUILD_BENCH=ON -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	$(CMAKE) --build $(BUILD) -j $(JOBS)
	$(VENV)/bin/ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The installed CMake package: find_package(kasoku) from a separate project.
example: cpp-test
	$(CMAKE) --install $(BUILD) > /dev/null
	$(CMAKE) -S examples/cpp -B build/example -G Ninja -DCMAKE_PREFIX_PATH=$(PREFIX)
	$(CMAKE) --build build/example
	./build/example/kasoku_example

py-test: install
	$(PY) -m pytest -q tests/python

bench: install
	$(PY) -m kasoku bench --params H16 --threads 1 --json bench-H16.jsonl

peers: install
	$(PY) bench/peers.py --params H16 --threads 1 --reps 5 --out peers-H16.jsonl

clean:
	rm -rf build $(VENV)
