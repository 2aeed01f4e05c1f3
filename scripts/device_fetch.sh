#!/usr/bin/env bash
# Here (a machine with apt and the network), once per session: what the GPU machine lacks for scripts/device_run.sh,
# downloaded into ignored folders to carry there (it has no network):
#   .devdeps/  the Debian packages for building kasoku's C++ tests (GoogleTest, OpenSSL, zstd, GMP, SIMDe, nlohmann-json)
#   .whl/      DESILO's CUDA 13 wheel for CPython 3.12, desilofhe-cu130 1.17.0 (the GPU peer; 2.0.0's cu132 build does
#              not run on that machine's driver, CUDA 13.0), and orion-fhe 1.0.2 with SciPy 1.14.1 (kasoku.nn's peer; the image has PyTorch)
# Then: (device run, carry [".devdeps", ".whl"])  scripts/device_run.sh --steps ...
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devdeps .whl
pkgs="libgtest-dev libssl-dev libssl3 libzstd-dev libzstd1 libgmp-dev libgmp10 libgmpxx4ldbl libsimde-dev nlohmann-json3-dev"
(cd .devdeps && apt-get download $pkgs)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 312 --platform manylinux_2_34_x86_64 \
    -d .whl "desilofhe-cu130==1.17.0"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 312 --platform manylinux_2_28_x86_64 \
    -d .whl "orion-fhe==1.0.2"
# Orion 1.0.2 indexes SciPy sparse matrices with torch tensors, which SciPy after 1.14.1 (the image's) refuses
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 312 --platform manylinux_2_17_x86_64 \
    -d .whl "scipy==1.14.1"
ls -la .devdeps .whl
