#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser (libFuzzer, clang-14, AddressSanitizer with leak checks and
# UndefinedBehaviorSanitizer): builds build/fuzz, writes a seed corpus of valid objects, then runs each target for
# RUNS inputs (default 1,000,000; `make fuzz-ci` runs a short pass); then the service's request bodies with atheris
# (tests/fuzz/fuzz_service_bodies.py, the installed kasoku). Summary lines go to stdout and build/fuzz/fuzz.log.
#   scripts/fuzz.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}
CMAKE=${CMAKE:-.venv/bin/cmake}
for tool in clang++-14 clang-14; do
    command -v $tool > /dev/null || { echo "fuzz.sh needs $tool and libFuzzer: sudo apt-get install clang-14 libclang-rt-14-dev (or make deps)"; exit 2; }
done
$CMAKE -S . -B build/fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DKASOKU_FUZZ=ON \
    -DKASOKU_CUDA=OFF -DKASOKU_OPENMP=OFF -DKASOKU_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=None \
    "-DCMAKE_CXX_FLAGS=-O1 -g" > /tmp/kasoku-fuzz-configure.$$.log 2>&1 || { cat /tmp/kasoku-fuzz-configure.$$.log; exit 1; }
rm -f /tmp/kasoku-fuzz-configure.$$.log
$CMAKE --build build/fuzz --target fuzz_targets -j "$(nproc)" > build/fuzz/build.log 2>&1 || { tail -40 build/fuzz/build.log; exit 1; }
bin=build/fuzz/tests/fuzz
rm -rf build/fuzz/seeds && $bin/fuzz_corpus build/fuzz/seeds
log=build/fuzz/fuzz.log
: > $log
# run_target NAME SEEDS COMMAND...: COMMAND (a libFuzzer-style fuzzer) for RUNS inputs from its corpus and SEEDS
run_target() {
    local kind=$1 seeds=$2
    shift 2
    local corpus=build/fuzz/corpus/$kind start
    mkdir -p $corpus
    start=$(date +%s)
    # -rss_limit_mb: a parser that allocates what the input claims would stop here; -timeout: per input
    if ! "$@" -runs="$RUNS" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
            -artifact_prefix=build/fuzz/crash-$kind- $corpus $seeds > build/fuzz/$kind.log 2>&1; then
        tail -40 build/fuzz/$kind.log
        echo "fuzz_$kind: FAILED (input saved as build/fuzz/crash-$kind-*)" | tee -a $log
        exit 1
    fi
    local execs cov
    execs=$(grep -o "stat::number_of_executed_units: *[0-9]*" build/fuzz/$kind.log | grep -o "[0-9]*$")
    cov=$(grep -o "cov: [0-9]*" build/fuzz/$kind.log | tail -1)
    echo "fuzz_$kind: $execs inputs, $cov edges, $(( $(date +%s) - start )) s, ${REPORT:-no crash, leak or sanitizer report}" | tee -a $log
}
for kind in parameters ciphertext public_key secret_key switch_key evaluation_keys share; do
    run_target $kind build/fuzz/seeds/$kind $bin/fuzz_$kind
done
# The service's bodies (Python: kasoku.service.wire and the ciphertexts they carry) with atheris, on the installed kasoku.
PY=${PY:-.venv/bin/python}
if $PY -c "import atheris, kasoku.service.wire" 2> /dev/null; then
    $PY tests/fuzz/fuzz_service_bodies.py --seeds build/fuzz/seeds/service_bodies > /dev/null
    REPORT="no crash (no exception but the parsers' own)" \
        run_target service_bodies build/fuzz/seeds/service_bodies $PY tests/fuzz/fuzz_service_bodies.py
else
    echo "fuzz_service_bodies: skipped (needs atheris and kasoku installed in $PY: make venv install)" | tee -a $log
fi
