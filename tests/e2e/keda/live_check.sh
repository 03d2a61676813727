#!/bin/bash
# Live check of KEDA v2.20.2 (tests/e2e/keda/README.md) against the e2e harness's control plane:
# harness up (no Prometheus), KEDA's CRDs, KEDA's operator and metrics API server on loopback
# with the harness's admin kubeconfig, a Deployment and a cron ScaledObject; checks that KEDA
# writes HPA keda-hpa-cron-so and the ScaledObject's status, and that its adapter answers the
# external metric read over HTTPS on 127.0.0.1. Holds /tmp/hpa-e2e.lock throughout and always
# runs `harness.ts down` at the end; kills only the two processes it started, by PID.
#
#   bash tests/e2e/keda/live_check.sh      # needs root (the harness), Go, kubectl, openssl, curl
#
# Work files and logs: $KEDA_LIVE_DIR (default /tmp/keda-live).
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
if [ -z "${KEDA_LIVE_LOCKED:-}" ]; then
  exec flock /tmp/hpa-e2e.lock env KEDA_LIVE_LOCKED=1 bash "$0" "$@"
fi
W=${KEDA_LIVE_DIR:-/tmp/keda-live}
mkdir -p "$W"
cd "$ROOT"
log() { echo "[$(date +%T)] $*"; }
fail() { log "FAIL: $*"; exit 1; }

mapfile -t BIN < <(node --import tsx tests/e2e/keda_tool.ts build) || fail "keda_tool.ts build"
OP=${BIN[0]} AD=${BIN[1]}
mapfile -t CRDS < <(node --import tsx tests/e2e/keda_tool.ts crds) || fail "keda_tool.ts crds"

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && log "killed $p"; done
  wait 2>/dev/null
  node --import tsx tests/e2e/harness.ts down
}
trap cleanup EXIT

log "harness up"
HPA_E2E_PROMETHEUS=0 HPA_E2E_KEEP=1 node --import tsx tests/e2e/harness.ts up >"$W/harness-up.log" 2>&1 ||
  { tail -40 "$W/harness-up.log"; fail "harness up"; }
KCFG=$ROOT/.e2e/kubeconfig
PKI=$ROOT/.e2e/pki
k() { kubectl --kubeconfig="$KCFG" "$@"; }

log "CRDs"
args=(); for f in "${CRDS[@]}"; do args+=(-f "$f"); done
# server-side: scaledjobs.keda.sh is too big for client-side apply's last-applied annotation
k apply --server-side "${args[@]}" >/dev/null || fail "apply CRDs"
k wait --for condition=established --timeout=60s "${args[@]}" >/dev/null || fail "CRDs established"
k create namespace keda >/dev/null

log "certificates (CA + one cert, SAN 127.0.0.1, serverAuth+clientAuth)"
C=$W/certs; rm -rf "$C"; mkdir -p "$C"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$C/ca.key" -out "$C/ca.crt" -days 2 \
  -subj /CN=keda-e2e-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$C/tls.key" -out "$C/tls.csr" -subj /CN=keda-operator 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:keda-operator.keda.svc.cluster.local\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n' >"$C/ext.cnf"
openssl x509 -req -in "$C/tls.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial \
  -out "$C/tls.crt" -days 2 -extfile "$C/ext.cnf" 2>/dev/null || fail "certificates"

log "start operator"
env KUBECONFIG="$KCFG" WATCH_NAMESPACE= POD_NAMESPACE=keda KEDA_CLUSTER_OBJECT_NAMESPACE=keda \
  "$OP" --leader-elect=false --enable-cert-rotation=false --cert-dir="$C" \
  --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081 \
  --metrics-service-bind-address=127.0.0.1:19666 \
  --zap-log-level=info --zap-encoder=console >"$W/operator.log" 2>&1 &
PIDS+=($!)
log "start adapter"
env KUBECONFIG="$KCFG" WATCH_NAMESPACE= POD_NAMESPACE=keda KEDA_CLUSTER_OBJECT_NAMESPACE=keda \
  "$AD" --secure-port=16443 --bind-address=127.0.0.1 \
  --cert-dir="$C" --tls-cert-file="$C/tls.crt" --tls-private-key-file="$C/tls.key" \
  --lister-kubeconfig="$KCFG" --authentication-kubeconfig="$KCFG" --authorization-kubeconfig="$KCFG" \
  --metrics-service-address=127.0.0.1:19666 --port=18082 \
  --zap-log-level=info --zap-encoder=console >"$W/adapter.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 60); do curl -sf http://127.0.0.1:18081/readyz >/dev/null && break; sleep 1; done
for _ in $(seq 60); do curl -sf --cacert "$C/ca.crt" https://127.0.0.1:16443/readyz >/dev/null && break; sleep 1; done
curl -sf http://127.0.0.1:18081/readyz >/dev/null || fail "operator not ready (see $W/operator.log)"
curl -sf --cacert "$C/ca.crt" https://127.0.0.1:16443/readyz >/dev/null || fail "adapter not ready (see $W/adapter.log)"

log "Deployment web and ScaledObject cron-so in keda-e2e"
k create namespace keda-e2e >/dev/null
k apply -f - >/dev/null <<'YAML' || fail "apply workload"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: keda-e2e}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.k8s.io/pause:3.10}]
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: cron-so, namespace: keda-e2e}
spec:
  scaleTargetRef: {name: web}
  minReplicaCount: 1
  maxReplicaCount: 5
  pollingInterval: 5
  triggers:
  - type: cron
    metadata: {timezone: Etc/UTC, start: "0 0 * * *", end: "59 23 * * *", desiredReplicas: "3"}
YAML
M=
for _ in $(seq 60); do
  M=$(k -n keda-e2e get scaledobject cron-so -o jsonpath='{.status.externalMetricNames[0]}')
  k -n keda-e2e get hpa keda-hpa-cron-so >/dev/null 2>&1 && [ -n "$M" ] && break
  sleep 1
done
k -n keda-e2e get hpa keda-hpa-cron-so || fail "no HPA keda-hpa-cron-so"
log "ScaledObject status: $(k -n keda-e2e get scaledobject cron-so -o jsonpath='{.status}')"
[ -n "$M" ] || fail "no status.externalMetricNames"
URL="https://127.0.0.1:16443/apis/external.metrics.k8s.io/v1beta1/namespaces/keda-e2e/$M?labelSelector=scaledobject.keda.sh%2Fname%3Dcron-so"
log "GET $URL"
BODY=$(curl -sS --cacert "$C/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$URL")
echo "$BODY"
echo "$BODY" | grep -q '"value": "3"' || fail "metric value is not 3"
log "OK"
