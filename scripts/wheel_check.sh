#!/usr/bin/env bash
# The wheel on a bare machine: installs WHEEL with pip into a fresh venv inside a minimal Debian root (debootstrap
# --variant=minbase with python3 and python3-venv: no compiler, no development packages, no OpenMP runtime), then runs
# `python -m kasoku demo` and scripts/wheel_smoke.py there. The wheels of its dependencies (NumPy, tqdm) are
# downloaded from PyPI on this machine (PY, default .venv/bin/python, runs pip) and installed offline there: the root
# needs no network.
#
#   scripts/wheel_check.sh dist/kasoku-*-manylinux*.whl      (make wheel-check builds the wheel first)
#
# The root is made once under build/bare-root (about 200 MB from deb.debian.org; BARE_ROOT chooses another place,
# DEBIAN_MIRROR another mirror) and every run starts a new venv in it. Needs root (chroot): run as root or with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 dist/kasoku-<version>-<tags>.whl (make wheel builds it)" >&2; exit 2; }
WHEEL=$1
ROOT=${BARE_ROOT:-build/bare-root}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
PY=${PY:-.venv/bin/python}

if [ ! -x "$ROOT/usr/bin/python3" ] || [ ! -f "$ROOT/.complete" ]; then
  echo "making a bare Debian root in $ROOT (debootstrap, a few minutes)"
  $SUDO rm -rf "$ROOT"
  $SUDO debootstrap --variant=minbase --include=python3,python3-venv bookworm "$ROOT" "$MIRROR" >"$ROOT.log" 2>&1 ||
    { tail -20 "$ROOT.log" >&2; echo "debootstrap failed (log: $ROOT.log)" >&2; exit 1; }
  $SUDO touch "$ROOT/.complete"
fi

# What "bare" means here, checked rather than assumed: no compiler, no headers of the libraries kasoku links, no
# OpenMP runtime.
for f in usr/bin/gcc usr/bin/cc usr/bin/c++ usr/include/openssl/evp.h usr/include/zstd.h; do
  [ ! -e "$ROOT/$f" ] || { echo "$ROOT is not bare: it has /$f" >&2; exit 1; }
done
if $SUDO find "$ROOT/usr/lib" -name 'libgomp.so*' | grep -q .; then echo "$ROOT is not bare: it has libgomp" >&2; exit 1; fi

cleanup() { for m in dev proc; do $SUDO umount "$ROOT/$m" 2>/dev/null || true; done; }
trap cleanup EXIT
$SUDO mount -t proc proc "$ROOT/proc"
$SUDO mount --bind /dev "$ROOT/dev"
$SUDO rm -rf "$ROOT/check"
$SUDO mkdir -p "$ROOT/check/wheels"
$SUDO cp "$WHEEL" "$ROOT/check/wheels/"
$SUDO cp scripts/wheel_smoke.py "$ROOT/check/"
pyv=$($SUDO chroot "$ROOT" python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
# The wheel's dependencies (NumPy, tqdm) for that Python, resolved from the wheel's own metadata.
platform=$(basename "$WHEEL" .whl | sed 's/.*-//')  # the wheel's own tag, e.g. manylinux_2_35_x86_64
$SUDO "$PY" -m pip download -q --only-binary :all: --platform "$platform" --platform manylinux2014_x86_64 \
  --python-version "$pyv" -d "$ROOT/check/wheels" "$WHEEL"
$SUDO chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/check /bin/bash -euo pipefail -c "
  cd /check
  python3 -m venv venv
  venv/bin/python -m pip install -q --disable-pip-version-check --no-index --find-links wheels wheels/$(basename "$WHEEL")
  venv/bin/python -m kasoku demo
  venv/bin/python wheel_smoke.py --bundled
"
echo "wheel check passed: $(basename "$WHEEL") in a bare Debian root"
