#!/usr/bin/env bash
# Spoke RSS with Flux objects plus held objects (docs/object-holds.md): fleetgate-sim
# serves one cluster with FLUX (default 1,000) seeded Flux objects and Kustomizations
# `apps-0`, `apps-1`, … that applied HELD (default 5,000) Deployments,
# 1,000 each (the simulator parses at most 1,024 YAML documents per path); a
# standalone fleetgate-spoke (--held-kinds apps/v1/Deployment) holds them all behind a closed
# holdObjects Gate. Prints the spoke's VmRSS once every Deployment is marked, and before the
# Gate exists (held kinds watched, nothing held) for comparison.
#
#   cargo build --release -p fleetgate-sim -p fleetgate-spoke --bins   # or --profile dist-spoke
#   bench/scripts/hold_rss.sh [target/release]
set -euo pipefail
BIN=${1:-target/release}
FLUX=${FLUX:-1000}
HELD=${HELD:-5000}
PORT=${PORT:-18391}
WORK=$(mktemp -d)
SIM= SPOKE=
trap 'kill $SPOKE $SIM 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BIN/fleetgate-sim" --clusters 1 --objects-per-cluster "$FLUX" --kubeconfig-dir "$WORK" \
  >"$WORK/sim.out" 2>/dev/null &
SIM=$!
for _ in $(seq 600); do [ -s "$WORK/sim.out" ] && break; sleep 0.1; done
read -r _ URL KC <"$WORK/sim.out"
k() { kubectl --kubeconfig "$KC" "$@"; }
k create namespace fleetgate-system >/dev/null
k create namespace web >/dev/null
python3 - "$HELD" "$WORK" <<'PY'
import json, sys
n, work = int(sys.argv[1]), sys.argv[2]
per = 1000
paths = {}
ks = ["apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
      "metadata: {name: bench, namespace: flux-system}\n"
      "spec: {interval: 1m, url: 'https://example.com/bench.git'}\n"]
for p in range((n + per - 1) // per):
    ks.append(f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
              f"metadata: {{name: apps-{p}, namespace: flux-system, labels: {{bench: hold}}}}\n"
              f"spec: {{interval: 10m, path: ./apps-{p}, prune: true, targetNamespace: web, "
              f"sourceRef: {{kind: GitRepository, name: bench}}}}\n")
    docs = [f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web-{i:05}, labels: {{app: web}}}}\n"
            f"spec: {{replicas: 1, template: {{spec: {{containers: [{{name: web, image: 'nginx:1.25'}}]}}}}}}\n"
            for i in range(p * per, min(n, (p + 1) * per))]
    paths[f"apps-{p}"] = "---\n".join(docs)
open(f"{work}/ks.yaml", "w").write("---\n".join(ks))
json.dump({"kind": "GitRepository", "namespace": "flux-system", "name": "bench",
           "revision": "main@sha1:" + "1" * 40, "manifests": paths}, open(f"{work}/push.json", "w"))
PY
k apply -f "$WORK/ks.yaml" >/dev/null
curl -sf -X POST "$URL/sim/v1/push" -H 'Content-Type: application/json' --data-binary @"$WORK/push.json" >/dev/null
for _ in $(seq 1200); do
  [ "$(k -n web get deploy -o name 2>/dev/null | wc -l)" -ge "$HELD" ] && break; sleep 0.5
done

RUST_LOG=warn "$BIN/fleetgate-spoke" --standalone --cluster cluster-000 --kubeconfig "$KC" \
  --namespace fleetgate-system --http-addr "127.0.0.1:$PORT" \
  --held-kinds apps/v1/Deployment 2>"$WORK/spoke.err" &
SPOKE=$!
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1==m {print $2}'; }
rss() { awk '/VmRSS/ {printf "%.1f MiB", $2/1024}' /proc/$SPOKE/status; }
for _ in $(seq 600); do [ -n "$(metric fleetgate_spoke_objects_governed 2>/dev/null || true)" ] && break; sleep 0.2; done
sleep 5 # settle: initial lists done, report sent
echo "spoke RSS, $FLUX Flux objects, $HELD applied Deployments watched, none held: $(rss)"
k apply -f - >/dev/null <<YAML
apiVersion: fleetgate.io/v1
kind: Gate
metadata: {name: bench-hold}
spec:
  clusters: {names: [cluster-000]}
  mode: holdObjects
  targets: {kinds: [Kustomization], namespaces: [flux-system], selector: {matchLabels: {bench: hold}}}
  objects: {kinds: [{group: apps, kind: Deployment}]}
  default: closed
YAML
START=$(date +%s.%N)
for _ in $(seq 1200); do
  [ "$(metric fleetgate_spoke_applied_objects_held || echo 0)" = "$HELD" ] && break; sleep 0.2
done
echo "all $HELD marked after $(echo "$(date +%s.%N) - $START" | bc) s (metrics poll, 0.2 s)"
sleep 5
echo "spoke RSS, $FLUX Flux objects + $HELD held objects: $(rss)"
