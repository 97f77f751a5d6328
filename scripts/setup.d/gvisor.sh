#!/usr/bin/env bash
# gVisor's runsc registered with the local Docker engine as the runtime "runsc", for
# --sandbox docker+runsc (every sandbox container runs on gVisor's user-space kernel).
#
# The runtime is added to /etc/docker/daemon.json ("runtimes" is one of the options dockerd
# reloads on SIGHUP, so the running engine takes it without a restart; later starts read it).
# Its flags:
#   --platform=ptrace  works in a VM without nested KVM (this CI machine); systrap is newer than
#                      Debian bookworm's runsc, and kvm hangs without /dev/kvm access
#   --network=none     the sandbox has loopback only; Docker's "none" network namespace is not
#                      enough for runsc's own network stack on an engine started --bridge=none
#   --host-uds=open    a sandbox may connect to host Unix sockets bind-mounted into it (the model
#                      bridge's socket); it cannot create any
#   --file-access=shared  files the engine puts into the container from outside (the verifier's
#                      upload, put_archive) are seen inside at once, not hidden by gVisor's cache
# Idempotent: a second run only checks.
# Needs: scripts/docker-engine.sh has started the engine (pid file /var/run/docker.pid).
set -euo pipefail

log() { printf 'gvisor: %s\n' "$*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
CONFIG=/etc/docker/daemon.json
PIDFILE=/var/run/docker.pid

if ! command -v runsc >/dev/null 2>&1; then
  log "installing runsc (Debian's gVisor package)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq runsc >/dev/null
fi

registered() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

changed=$($SUDO python3 - "$CONFIG" "$(command -v runsc)" <<'EOF'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
want = {"path": runsc, "runtimeArgs": ["--platform=ptrace", "--network=none", "--host-uds=open",
                                  "--file-access=shared"]}
try:
    with open(path) as handle:
        config = json.load(handle)
except FileNotFoundError:
    config = {}
if config.get("runtimes", {}).get("runsc") == want:
    print("no")
    sys.exit(0)
config.setdefault("runtimes", {})["runsc"] = want
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path + ".tmp", "w") as handle:
    json.dump(config, handle, indent=2)
os.replace(path + ".tmp", path)
print("yes")
EOF
)

if [ "$changed" = yes ] || ! registered; then
  log "registering runsc with the Docker engine (SIGHUP reloads $CONFIG)"
  $SUDO kill -HUP "$(cat "$PIDFILE")"
  for _ in $(seq 1 20); do registered && break; sleep 0.5; done
fi
registered || { log "the engine does not list the runsc runtime; see /var/log/benchflow-dockerd.log"; exit 1; }
if ! out=$(timeout 120 docker run --rm --runtime runsc --network none debian:bookworm-slim true 2>&1); then
  log "runsc is registered but a container does not start on it: $out"
  exit 1
fi
log "ready: docker run --runtime runsc works"
