#!/usr/bin/env bash
# A real single-node Kubernetes for the cluster suite (deploy/e2e/), on this machine, as root:
#   cluster.sh up     starts etcd, containerd, the control plane, the kubelet, kube-proxy, CoreDNS
#                     and kube-router (NetworkPolicy), and waits for a Ready node
#   cluster.sh down   stops exactly what `up` started and restores what it changed
#   cluster.sh env    prints KUBECONFIG=... and the bin directory (for the suite)
#   cluster.sh load IMAGE...          copies podman images into the cluster's containerd
#   cluster.sh load-as IMAGE NAME     the same, under another name there
#
# Binaries: Kubernetes, CoreDNS, kube-router and pause from deploy/e2e/build.sh (cached per
# machine); etcd, containerd, runc, the CNI plugins, iptables, ipset and conntrack from Debian.
# Everything the cluster writes lives under $STATE (/var/lib/petstore-e2e) and $RUN
# (/run/petstore-e2e), except what Kubernetes or the CNI plugins place elsewhere by design and
# `down` removes: the cni0 bridge, KUBE-*/CNI-* iptables chains and kube-router's ipsets (only those
# that did not exist before `up`), /run/netns/cni-* network namespaces, the hostPath provisioner's
# /tmp/hostpath_pv/* (only those it made), and the sysctls the kubelet and kube-proxy set (saved
# by `up`, restored by `down`). Processes are stopped by the PIDs `up` recorded; nothing else is
# touched. Deliberately: CoreDNS and kube-router run as host processes, not pods, so that the
# cluster needs no image beyond pause.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${PETSTORE_E2E_STATE:-/var/lib/petstore-e2e}"
RUN="${PETSTORE_E2E_RUN:-/run/petstore-e2e}"
NODE=petstore-e2e
POD_CIDR=10.244.0.0/16
BRIDGE_IP=10.244.0.1
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
API_PORT=6443
ETCD_PORT=32379
PAUSE_IMAGE=localhost/petstore-e2e/pause:1
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.ipv4.conf.all.route_localnet
  kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

log() { echo "[e2e cluster] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

export KUBECONFIG="$STATE/pki/admin.kubeconfig"
containerd_sock="$RUN/containerd.sock"
ctr_() { ctr --address "$containerd_sock" -n k8s.io "$@"; }

bin_dir() {
  if [[ -z "${E2E_BIN:-}" ]]; then
    E2E_BIN="$(bash "$here/build.sh" | tail -n 1)"
  fi
  echo "$E2E_BIN"
}

# start NAME CMD...: starts CMD in its own session, logs to $STATE/logs/NAME.log, records its PID.
start() {
  local name="$1"
  shift
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/pids/$name"
  echo "$name" >>"$RUN/started"
}

# wait_until SECONDS WHAT CMD...: polls CMD every 0.5 s.
wait_until() {
  local deadline=$((SECONDS + $1)) what="$2"
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out waiting for $what (logs: $STATE/logs)"
    sleep 0.5
  done
}

host_ip() { ip -4 route get 192.0.2.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -n 1; }

make_pki() {
  local pki="$STATE/pki" ip="$1"
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=petstore-e2e-ca 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    cert() { # NAME SUBJECT [SANS]
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      if [[ -n "${3:-}" ]]; then printf 'subjectAltName=%s\n' "$3" >"$1.ext"; else : >"$1.ext"; fi
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out "$1.crt" -extfile "$1.ext" 2>/dev/null
    }
    cert apiserver /CN=kube-apiserver \
      "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$API_SERVICE_IP,IP:$ip"
    # One identity in system:masters for every component and for the suite: a throwaway cluster.
    cert admin "/O=system:masters/CN=petstore-e2e-admin"
    cat >admin.kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: e2e
    cluster: { server: "https://127.0.0.1:$API_PORT", certificate-authority: $pki/ca.crt }
users:
  - name: admin
    user: { client-certificate: $pki/admin.crt, client-key: $pki/admin.key }
contexts:
  - name: e2e
    context: { cluster: e2e, user: admin }
current-context: e2e
EOF
  )
}

write_configs() {
  local ip="$1" conf="$STATE/conf"
  mkdir -p "$conf" "$STATE/cni/net.d" "$STATE/cni/networks"
  cat >"$conf/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd"
state = "$RUN/containerd"
[grpc]
  address = "$containerd_sock"
[ttrpc]
  address = "$RUN/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # The kubelet asks for a negative oom_score_adj, which this kind of VM refuses.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF
  cat >"$STATE/cni/net.d/10-petstore-e2e.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "petstore-e2e",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$STATE/cni/networks",
        "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$BRIDGE_IP" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
  cat >"$conf/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$containerd_sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: [$BRIDGE_IP]
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: false }
  x509: { clientCAFile: $STATE/pki/ca.crt }
authorization: { mode: AlwaysAllow }
# A shared CI machine: evict nothing for disk or memory the suite does not use.
evictionHard: { memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%" }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
  cat >"$conf/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE
clientConnection: { kubeconfig: $KUBECONFIG }
# Leave the machine's conntrack settings as they are.
conntrack: { maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }
EOF
  cat >"$conf/Corefile" <<EOF
.:53 {
  bind $BRIDGE_IP
  errors
  ready 127.0.0.1:38181
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $KUBECONFIG e2e
    pods insecure
    fallthrough in-addr.arpa ip6.arpa
    ttl 5
  }
  # Short, negative answers too: a StatefulSet pod's name is looked up before it exists.
  cache 5
  loadbalance
}
EOF
}

up() {
  [[ $EUID -eq 0 ]] || die "must run as root"
  [[ ! -e "$RUN/started" ]] || die "a cluster is already up (or was not torn down): $0 down"
  for cmd in etcd containerd runc ctr iptables ipset conntrack openssl ip; do
    command -v "$cmd" >/dev/null || die "$cmd not found (apt-get install etcd-server containerd runc iptables ipset conntrack openssl iproute2)"
  done
  [[ -x /usr/lib/cni/bridge ]] || die "CNI plugins not found (apt-get install containernetworking-plugins)"
  ! ip link show cni0 >/dev/null 2>&1 || die "cni0 exists already: another cluster runs here"
  local bin ip
  bin="$(bin_dir)"
  ip="$(host_ip)"
  [[ -n "$ip" ]] || die "no IPv4 address on the default route"
  log "node $NODE at $ip, binaries $bin"

  rm -rf "$STATE"
  mkdir -p "$STATE/logs" "$RUN/pids" "$STATE/kubelet"
  : >"$RUN/started"
  # What `down` restores or leaves alone.
  for s in "${SYSCTLS[@]}"; do
    sysctl -n "$s" 2>/dev/null | sed "s|^|$s=|" >>"$RUN/sysctls" || true
  done
  iptables-save | grep -oE '^:(KUBE|CNI)-[^ ]+' | sort -u >"$RUN/chains-before" || true
  ipset list -n 2>/dev/null | sort >"$RUN/ipsets-before" || true
  ls /run/netns 2>/dev/null | sort >"$RUN/netns-before" || true
  # The pods' network namespaces are mounted under /run/netns. Made a shared mount point of its own
  # first, as iproute2 and podman make it: if another tool did so later, while pods run, the
  # namespaces mounted before would be hidden under its mount and could never be removed.
  mkdir -p /run/netns
  if mountpoint -q /run/netns; then
    touch "$RUN/netns-was-mounted"
  else
    mount --bind /run/netns /run/netns
  fi
  mount --make-shared /run/netns
  ls /tmp/hostpath_pv 2>/dev/null | sort >"$RUN/hostpath-before" || true
  echo "$bin" >"$RUN/bin"

  make_pki "$ip"
  write_configs "$ip"
  sysctl -qw net.ipv4.ip_forward=1
  # The bridge exists before the first pod, so CoreDNS can bind its address at once.
  ip link add cni0 type bridge
  ip addr add "$BRIDGE_IP/16" dev cni0
  ip link set cni0 up

  start etcd etcd --name e2e --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls http://127.0.0.1:32380 --initial-advertise-peer-urls http://127.0.0.1:32380 \
    --initial-cluster e2e=http://127.0.0.1:32380 --listen-metrics-urls http://127.0.0.1:32381
  start containerd containerd --config "$STATE/conf/containerd.toml"
  local pki="$STATE/pki"
  start kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --secure-port "$API_PORT" --advertise-address "$ip" --allow-privileged=true \
    --service-cluster-ip-range "$SERVICE_CIDR" --authorization-mode RBAC \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key"
  wait_until 90 "the API server" "$bin/kubectl" get --raw /readyz
  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$KUBECONFIG" \
    --leader-elect=false --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=false --enable-hostpath-provisioner \
    --cluster-cidr "$POD_CIDR" --service-cluster-ip-range "$SERVICE_CIDR"
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false
  wait_until 60 "containerd" ctr_ version
  import_pause "$bin"
  start kubelet "$bin/kubelet" --config "$STATE/conf/kubelet.yaml" --kubeconfig "$KUBECONFIG" \
    --root-dir "$STATE/kubelet" --hostname-override "$NODE" --node-ip "$ip"
  start kube-proxy "$bin/kube-proxy" --config "$STATE/conf/kube-proxy.yaml"
  start coredns "$bin/coredns" -conf "$STATE/conf/Corefile"
  wait_until 120 "node $NODE to register" "$bin/kubectl" get node "$NODE"
  # kube-router reads the Node object at start.
  start kube-router "$bin/kube-router" --kubeconfig "$KUBECONFIG" --hostname-override "$NODE" \
    --run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
    --metrics-port 0 --health-port 20244
  "$bin/kubectl" wait --for=condition=Ready "node/$NODE" --timeout=120s >/dev/null
  wait_until 60 "CoreDNS" curl -sf http://127.0.0.1:38181/ready
  wait_until 60 "the default ServiceAccount" "$bin/kubectl" -n default get serviceaccount default
  "$bin/kubectl" apply -f - >/dev/null <<'EOF'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: hostpath
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
  log "up: node $NODE Ready"
}

import_pause() {
  local bin="$1" dir
  dir="$(mktemp -d)"
  cp "$bin/pause" "$dir/pause"
  tar -C "$dir" -c pause | podman import --quiet --change 'ENTRYPOINT ["/pause"]' - "$PAUSE_IMAGE" >/dev/null
  rm -rf "$dir"
  load_image "$PAUSE_IMAGE"
}

# load_image NAME...: copies podman images into the cluster's containerd.
load_image() {
  local name
  for name in "$@"; do
    podman save --format docker-archive "$name" | ctr_ images import - >/dev/null
  done
}

# load_image_as SOURCE NAME: copies podman image SOURCE into the cluster's containerd as NAME.
load_image_as() {
  load_image "$1"
  [[ "$1" == "$2" ]] || ctr_ images tag --force "$1" "$2" >/dev/null
}

stop_pid() { # NAME SIGNAL-WAIT-SECONDS
  local name="$1" pid
  [[ -f "$RUN/pids/$name" ]] || return 0
  pid="$(cat "$RUN/pids/$name")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + ${2:-20}))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/pids/$name"
}

down() {
  [[ -e "$RUN/started" ]] || { log "nothing to tear down"; return 0; }
  local round
  # Every step is tried, whatever the ones before it did.
  set +e +o pipefail
  local bin kubectl
  bin="$(cat "$RUN/bin")"
  kubectl="$bin/kubectl"
  # Pods first, while the kubelet and the network plugins can still release what they hold.
  if [[ -f "$RUN/pids/kubelet" ]] && "$kubectl" get --raw /readyz >/dev/null 2>&1; then
    log "deleting every namespace's workloads and pods"
    "$kubectl" get namespaces -o name | grep -vE '^namespace/(default|kube-system|kube-public|kube-node-lease)$' |
      xargs -r "$kubectl" delete --wait=false >/dev/null 2>&1 || true
    "$kubectl" delete pods --all -A --grace-period=5 --wait=false >/dev/null 2>&1 || true
    "$kubectl" delete pvc --all -A --wait=false >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 90))
    while ((SECONDS < deadline)); do
      [[ -z "$("$kubectl" get pods -A -o name 2>/dev/null)" && -z "$("$kubectl" get pv -o name 2>/dev/null)" ]] && break
      sleep 1
    done
  fi
  for name in kube-router coredns kube-proxy kubelet kube-scheduler kube-controller-manager; do stop_pid "$name"; done
  # Whatever containers are left (a pod the kubelet had not removed), then containerd.
  if [[ -f "$RUN/pids/containerd" ]]; then
    local id
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    sleep 1
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$id" >/dev/null 2>&1 || true; done
  fi
  stop_pid kube-apiserver
  stop_pid containerd 30
  stop_pid etcd
  # containerd's shims outlive it by design; ours are the ones that name our containerd's socket.
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $containerd_sock" || true); do kill -KILL "$pid" 2>/dev/null || true; done

  log "removing cni0, the chains, ipsets, network namespaces and mounts the cluster made"
  ip link delete cni0 2>/dev/null || true
  remove_chains
  local set
  for set in $(ipset list -n 2>/dev/null | sort | comm -13 "$RUN/ipsets-before" -); do ipset destroy "$set" 2>/dev/null || true; done
  local ns
  for ns in $(ls /run/netns 2>/dev/null | grep '^cni-' | sort | comm -13 "$RUN/netns-before" -); do
    while mountpoint -q "/run/netns/$ns" && umount "/run/netns/$ns" 2>/dev/null; do :; done
    rm -f "/run/netns/$ns"
  done
  local dir
  for dir in $(ls /tmp/hostpath_pv 2>/dev/null | sort | comm -13 "$RUN/hostpath-before" -); do rm -rf "/tmp/hostpath_pv/$dir"; done
  rmdir /tmp/hostpath_pv 2>/dev/null || true
  # containerd makes /run/netns a mount point for the pods' namespaces.
  if [[ ! -e "$RUN/netns-was-mounted" ]]; then
    for round in 1 2 3; do mountpoint -q /run/netns && umount /run/netns 2>/dev/null; done
  fi
  # Mounts under the cluster's own directories (the kubelet bind-mounts its root on itself), deepest
  # first, until none is left.
  for round in 1 2 3 4 5; do
    local mounts
    mounts="$(findmnt -rn -o TARGET | grep -E "^($STATE|$RUN)(/|$)" | sort -r)"
    [[ -n "$mounts" ]] || break
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done <<<"$mounts"
  done
  # The kubelet's cgroups (empty now that every container is gone), deepest first.
  find /sys/fs/cgroup/*/kubepods* -depth -type d 2>/dev/null | while read -r d; do rmdir "$d" 2>/dev/null || true; done
  local line
  while IFS= read -r line; do sysctl -qw "$line" 2>/dev/null || true; done <"$RUN/sysctls"
  rm -rf "$RUN" "$STATE"
  log "down"
}

# Removes the KUBE-* and CNI-* chains that did not exist before `up`, with the rules that jump to
# them, in every table.
remove_chains() {
  local table new
  new="$(iptables-save | grep -oE '^:(KUBE|CNI)-[^ ]+' | sort -u | comm -13 "$RUN/chains-before" - | sed 's/^://')"
  [[ -n "$new" ]] || return 0
  for table in filter nat mangle raw; do
    local chain rule
    # Rules in any chain that jump to one of ours.
    iptables-save -t "$table" | grep -E '^-A ' | while read -r rule; do
      local target
      target="$(sed -n 's/.* -j \([^ ]*\).*/\1/p' <<<"$rule")"
      if grep -qxF "$target" <<<"$new"; then
        # shellcheck disable=SC2086
        eval "iptables -t $table ${rule/-A /-D }" 2>/dev/null || true
      fi
    done
    for chain in $new; do iptables -t "$table" -F "$chain" 2>/dev/null || true; done
    for chain in $new; do iptables -t "$table" -X "$chain" 2>/dev/null || true; done
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env)
    echo "KUBECONFIG=$KUBECONFIG"
    echo "E2E_BIN=$(cat "$RUN/bin" 2>/dev/null || bin_dir)"
    ;;
  load) shift; load_image "$@" ;;
  load-as) load_image_as "$2" "$3" ;;
  *) echo "usage: $0 up|down|env|load IMAGE...|load-as IMAGE NAME" >&2; exit 2 ;;
esac
