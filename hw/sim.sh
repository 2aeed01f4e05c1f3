#!/usr/bin/env bash
# One Verilator run of an NTT design against kasoku::hls::ntt (hw/sim/tb_ntt.cpp):
#   hw/sim.sh HW_GEN DESIGN M LANES WORKDIR     (DESIGN: fig7 | lanes; HW_GEN: the built hw_gen program)
# Prints the testbench's JSON line; exit status 0 when equal bit for bit and within 10% of the cycle model.
# (-Wno-WIDTH: the datapath truncates on purpose, to W bits once a result is known to be below P.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gen="$1" design="$2" m="$3" lanes="$4" dir="$5"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
"$gen" --design "$design" --m "$m" --lanes "$lanes" --out "$dir"
# shellcheck disable=SC1091
. "$dir/params.txt"
gparams=(-GM_LOG="$M_LOG" -GW="$W" -GP="$P" -GMU="$MU" -GROM_FILE="\"$dir/rom.hex\"")
[ "$DESIGN" = lanes ] && gparams+=(-GLANES_LOG="$LANES_LOG")
verilator --cc --exe --build -j "$(nproc)" -O2 --prefix Vtop --top-module "$TOP" \
  -Wall -Wno-fatal -Wno-DECLFILENAME -Wno-WIDTH \
  -Wno-UNUSEDSIGNAL -Wno-UNUSEDPARAM "${gparams[@]}" -Mdir "$dir/obj" -o tb \
  "$here"/rtl/*.v "$here/sim/tb_ntt.cpp" > "$dir/verilator.log" 2>&1 || { cat "$dir/verilator.log"; exit 1; }
"$dir/obj/tb" "$dir"
