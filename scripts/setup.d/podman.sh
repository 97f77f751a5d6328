#!/usr/bin/env bash
# Podman's Docker-compatible API on a socket, for --sandbox podman (and --sandbox docker with
# DOCKER_HOST pointing at it), with the offline base images loaded from the Docker engine.
#
# Rootful: `podman system service` runs as root on unix:///run/podman/podman.sock (CI runs as
# root with no systemd user session, so a rootless service would need a user, subuid ranges and
# newuidmap set up by hand; rootful is what this script starts).
#
# Containers get the open-file and process limits this machine allows: podman's defaults
# (1048576) are above the hard limits of a container without CAP_SYS_RESOURCE, and runc then
# refuses to start anything ("error setting rlimits").
#
# Idempotent: a second run only checks the socket and the images.
# Needs: scripts/docker-engine.sh has run (the base images are copied from that engine).
set -euo pipefail

log() { printf 'podman: %s\n' "$*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
SOCK=/run/podman/podman.sock
HOST=unix://$SOCK
PIDFILE=/run/podman/benchflow-service.pid
CONF=/etc/containers/containers.conf.d/benchflow-ulimits.conf
IMAGES=(debian:bookworm-slim benchflow/python:3.11-bookworm benchflow/python-slim:3.11-bookworm)

answers() { curl -sf --max-time 5 --unix-socket "$SOCK" http://podman/_ping >/dev/null 2>&1; }

if ! command -v podman >/dev/null 2>&1 || [ ! -x /usr/libexec/podman/catatonit ]; then
  log "installing podman (and catatonit, its container init)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq podman catatonit >/dev/null
fi

# podman clamps its own process limit to kernel.pid_max: ask for at most half of that
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu); half_pids=$(( $(cat /proc/sys/kernel/pid_max) / 2 ))
[ "$nofile" = unlimited ] && nofile=1048576
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt "$half_pids" ]; } && nproc=$half_pids
want=$(printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' "$nofile" "$nofile" "$nproc" "$nproc")
if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
  $SUDO mkdir -p "$(dirname "$CONF")"
  printf '%s\n' "$want" | $SUDO tee "$CONF" >/dev/null
  if answers && [ -f "$PIDFILE" ]; then  # the running service read the old limits: start it again
    $SUDO kill "$(cat "$PIDFILE")" 2>/dev/null || true
    for _ in $(seq 1 20); do answers || break; sleep 0.5; done
  fi
fi

if ! answers; then
  log "starting podman system service on $HOST (rootful)"
  $SUDO mkdir -p "$(dirname "$SOCK")"
  $SUDO rm -f "$SOCK"
  $SUDO sh -c "setsid nohup podman system service --time=0 $HOST >/var/log/benchflow-podman.log 2>&1 </dev/null & echo \$! >$PIDFILE"
  for _ in $(seq 1 60); do answers && break; sleep 0.5; done
  answers || { log "podman did not answer on $HOST; see /var/log/benchflow-podman.log"; exit 1; }
fi

for image in "${IMAGES[@]}"; do
  docker -H "$HOST" image inspect "$image" >/dev/null 2>&1 && continue
  docker image inspect "$image" >/dev/null 2>&1 || { log "$image is not on the Docker engine; skipped"; continue; }
  log "loading $image into podman"
  docker save "$image" | docker -H "$HOST" load >/dev/null
done
log "ready at $HOST (BENCHFLOW_PODMAN_HOST=$HOST, or DOCKER_HOST=$HOST with --sandbox docker)"
