#!/usr/bin/env bash
# On the GPU machine (the device tool): unpack the carried packages (scripts/device_debs.sh) beside the system, build
# the C++ tests with CUDA, run the GPU ones first and then the rest, and time the core operations on the GPU and the
# CPU. Logs and JSON lines go to $OUT (or ./out).
#   device run: scripts/device_check.sh          carry: [".devdeps"]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
root=/tmp/devroot
mkdir -p $root
for f in .devdeps/*.deb; do dpkg -x "$f" $root; done
lib=$root/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-}
{ nvidia-smi; lscpu; nvcc --version; } > "$OUT/machine.txt" 2>&1
cmake -S . -B build/device -G Ninja -DKASOKU_BUILD_TESTS=ON -DKASOKU_CUDA=ON -DCMAKE_PREFIX_PATH="$root/usr" \
    -DOPENSSL_ROOT_DIR="$root/usr" -DCMAKE_CXX_FLAGS="-isystem $root/usr/include" > "$OUT/build.log" 2>&1 &&
cmake --build build/device -j "$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
for t in test_gpu_device test_gpu_bodies test_gpu_backend; do
    echo "== $t"; build/device/tests/cpp/$t 2>&1 | tail -25
done | tee "$OUT/gpu-tests.log"
(cd build/device && ctest -j "$(nproc)" --output-on-failure) > "$OUT/ctest.log" 2>&1
grep -E "tests passed|Failed" "$OUT/ctest.log"
