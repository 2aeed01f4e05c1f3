#!/usr/bin/env bash
# Here (a machine with apt and the network): the Debian packages that the GPU machine lacks for building kasoku's C++
# tests, downloaded into .devdeps/ (ignored by git), to carry to it. The device tool's README shows the pattern:
#   scripts/device_debs.sh                      # once per session, here
#   (device run, carry [".devdeps"])  scripts/device_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devdeps
pkgs="libgtest-dev libssl-dev libssl3 libzstd-dev libzstd1 libgmp-dev libgmp10 libgmpxx4ldbl libsimde-dev nlohmann-json3-dev"
(cd .devdeps && apt-get download $pkgs)
ls -la .devdeps
