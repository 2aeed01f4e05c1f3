#!/usr/bin/env bash
# On the GPU machine (the device tool), from the project root: unpack the carried Debian packages (.devdeps/) beside the
# system and the peers' wheels (.whl/), both fetched here by scripts/device_fetch.sh, then run scripts/device_run.py: build,
# then every measuring step in order, results in $OUT (docs/GPU.md "Running on the GPU machine").
#   device run: scripts/device_run.sh --steps build,gpu-tests,...     carry: [".devdeps", ".whl"]
# Here, without a GPU: scripts/device_run.sh --dry-run (CUDA steps skipped, the rest at small sizes; a test runs it).
set -uo pipefail
cd "$(dirname "$0")/.."
args=("$@")
dry=0
for a in "$@"; do [ "$a" = --dry-run ] && dry=1; done
if [ $dry = 0 ]; then
    root=/tmp/kasoku-devroot
    mkdir -p $root
    for f in .devdeps/*.deb; do [ -e "$f" ] && dpkg -x "$f" $root; done
    export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
    # Debian keeps gmp.h and openssl/opensslconf.h under the multiarch include folder: both folders are needed.
    export KASOKU_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$root/usr -DOPENSSL_ROOT_DIR=$root/usr \
'-DCMAKE_CXX_FLAGS=-isystem $root/usr/include -isystem $root/usr/include/x86_64-linux-gnu' ${KASOKU_CMAKE_ARGS:-}"
    # the peers' wheels, each in a folder of its own: DESILO (GPU peer) and Orion (kasoku.nn's peer; the image has
    # PyTorch and Orion's other needs but a SciPy newer than Orion takes: 1.14.1 travels with it)
    for w in desilofhe orion_fhe; do
        if ls .whl/$w*.whl >/dev/null 2>&1; then
            extra=$([ $w = orion_fhe ] && ls .whl/scipy-*.whl 2>/dev/null)
            python3 -m pip install -q --no-index --no-deps --target /tmp/kasoku-$w .whl/$w*.whl $extra &&
                export PYTHONPATH=/tmp/kasoku-$w:${PYTHONPATH:-}
        fi
    done
fi
exec python3 scripts/device_run.py "${args[@]}"
