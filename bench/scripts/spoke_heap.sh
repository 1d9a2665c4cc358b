#!/usr/bin/env bash
# Where a spoke's memory goes with FLUX (default 1,000) Flux objects: fleetgate-sim serves one
# cluster with that many seeded Flux objects, a standalone fleetgate-spoke governs them. Prints
# the spoke's VmRSS split into heap (RssAnon) and mapped code and data (RssFile) once settled,
# then, with HEAPTRACK=1 and a spoke built with the system allocator, the allocations still live
# at that moment by call site (heaptrack_print's "leaked" list: the spoke is killed while
# settled, so everything it holds counts as leaked).
#
#   cargo build --release -p fleetgate-sim -p fleetgate-spoke --bins
#   bench/scripts/spoke_heap.sh [target/release]            # RSS split only
#   cargo build --profile dist-spoke -p fleetgate-spoke     # the spoke as its image ships it:
#   SPOKE_BIN=target/dist-spoke/fleetgate-spoke bench/scripts/spoke_heap.sh target/release
#   cargo build --release -p fleetgate-spoke --features system-alloc --bins  # then:
#   HEAPTRACK=1 SPOKE_BIN=target/release/fleetgate-spoke bench/scripts/spoke_heap.sh
set -euo pipefail
BIN=${1:-target/release}
SPOKE_BIN=${SPOKE_BIN:-$BIN/fleetgate-spoke}
FLUX=${FLUX:-1000}
PORT=${PORT:-18392}
SETTLE=${SETTLE:-8}
WORK=$(mktemp -d)
SIM= SPOKE= WRAP=
trap 'kill $SPOKE $WRAP $SIM 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BIN/fleetgate-sim" --clusters 1 --objects-per-cluster "$FLUX" --kubeconfig-dir "$WORK" \
  >"$WORK/sim.out" 2>/dev/null &
SIM=$!
for _ in $(seq 600); do [ -s "$WORK/sim.out" ] && break; sleep 0.1; done
read -r _ _ KC <"$WORK/sim.out"
kubectl --kubeconfig "$KC" create namespace fleetgate-system >/dev/null

ARGS=(--standalone --cluster cluster-000 --kubeconfig "$KC" --namespace fleetgate-system
  --http-addr "127.0.0.1:$PORT")
if [ "${HEAPTRACK:-0}" = 1 ]; then
  RUST_LOG=warn heaptrack -o "$WORK/heap" "$SPOKE_BIN" "${ARGS[@]}" >"$WORK/heaptrack.out" 2>&1 &
  WRAP=$!
  # heaptrack (a shell script) runs the spoke as a descendant: find the process running it.
  EXE=$(readlink -f "$SPOKE_BIN")
  for _ in $(seq 100); do
    for p in $(pgrep -f -- "$SPOKE_BIN --standalone" || true); do
      [ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" = "$EXE" ] && SPOKE=$p
    done
    [ -n "$SPOKE" ] && break; sleep 0.1
  done
else
  RUST_LOG=warn "$SPOKE_BIN" "${ARGS[@]}" 2>"$WORK/spoke.err" &
  SPOKE=$!
fi
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1==m {print $2}'; }
for _ in $(seq 1200); do [ -n "$(metric fleetgate_spoke_objects_governed 2>/dev/null || true)" ] && break; sleep 0.2; done
sleep "$SETTLE"
awk -v n="$FLUX" '/VmRSS|RssAnon|RssFile|RssShmem/ {printf "%s %.1f MiB  ", $1, $2/1024} END {print "(" n " Flux objects)"}' \
  "/proc/$SPOKE/status"
# Resident memory by mapping (the binary's own segments, heap, stacks, shared libraries).
awk '/^[0-9a-f]+-[0-9a-f]+ / {name = ($6 == "" ? "[anon]" : $6); perm = $2}
     /^Rss:/ {rss[name " " perm] += $2}
     END {for (k in rss) if (rss[k] >= 256) printf "%8.1f MiB  %s\n", rss[k]/1024, k}' \
  "/proc/$SPOKE/smaps" | sort -rn | head -12
if [ "${HEAPTRACK:-0}" = 1 ]; then
  kill -KILL "$SPOKE"
  wait "$WRAP" 2>/dev/null || true
  FILE=$(ls "$WORK"/heap* | head -1)
  heaptrack_print --print-leaks 1 --print-peaks 0 --print-allocators 0 --print-temporary 0 \
    --print-histogram 0 --print-flamegraph 0 --peak-limit 25 --sub-peak-limit 4 -f "$FILE" \
    | sed -n '/MEMORY LEAKS/,$p' | head -${LINES_OUT:-160}
fi
