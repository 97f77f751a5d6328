#!/usr/bin/env bash
# Make a Docker engine answer on this machine, offline, and idempotently.
#
# 1. Install the engine (docker.io), debootstrap, bubblewrap and slirp4netns from the
#    distribution's packages when they are missing.
# 2. Start dockerd in the background with no bridge network and no iptables
#    rules (sandboxes run with --network none; builds that need packages use
#    the host network).
# 3. Make the offline base images the fixture and example tasks use, with
#    debootstrap --variant=minbase from the configured apt mirror, then
#    docker import. Docker Hub is never contacted.
#
# A second run only checks and takes about a second.
#
# --remote also starts a second, independent dockerd on
# unix:///run/benchflow-remote-docker.sock (own data, exec root and pidfile)
# and loads the base images into it, to test --sandbox remote-docker:
#   BENCHFLOW_REMOTE_DOCKER_HOST=unix:///run/benchflow-remote-docker.sock
# --standins also makes benchflow/standin:trixie (Debian 13: Python 3.13, pip, venv, curl) and :bookworm
# (Debian 12: Python 3.11, for pins with no 3.13 wheel), the bases of
# the offline stand-ins that benchmarks/real_tasks.py puts in the FROM of published tasks.
# Usage: scripts/docker-engine.sh [--no-images] [--remote] [--standins]
set -euo pipefail

log() { printf 'docker-engine: %s\n' "$*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

engine_answers() { docker info >/dev/null 2>&1; }

install_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  command -v slirp4netns >/dev/null 2>&1 || missing+=(slirp4netns)  # the local sandbox's public network
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
}

clear_stale_pidfile() {
  # clear_stale_pidfile FILE PATTERN: a dockerd (or its containerd) killed with -9 leaves its pid
  # file behind, and the next start refuses or hangs on it. A process that still holds the file and
  # whose command line has PATTERN is this engine's leftover: stop it. Then remove the file.
  local file=$1 pattern=$2 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$pattern"; then
    $SUDO kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do [ -d "/proc/$pid" ] || break; sleep 0.5; done
    $SUDO kill -9 "$pid" 2>/dev/null || true
  fi
  $SUDO rm -f "$file"
}

launch_dockerd() {
  # launch_dockerd NAME ANSWERS_FN EXEC_ROOT LOGFILE ARGS...: start it (twice at most) until it answers.
  local name=$1 answers=$2 exec_root=$3 logfile=$4 attempt pidfile
  shift 4
  pidfile="$exec_root.pid"
  for attempt in 1 2; do
    clear_stale_pidfile "$pidfile" "--pidfile=$pidfile"
    clear_stale_pidfile "$exec_root/containerd/containerd.pid" "$exec_root/containerd/containerd.toml"
    # setsid: the engine gets a session of its own, so a signal to the process group of whatever
    # started it (a test runner stopping its children, a shell's job control) never reaches it.
    $SUDO sh -c "setsid nohup dockerd --pidfile=$pidfile --exec-root=$exec_root $* >$logfile 2>&1 < /dev/null &"
    for _ in $(seq 1 120); do
      "$answers" && return 0
      sleep 0.5
    done
    log "$name did not answer within 60 s (attempt $attempt); see $logfile"
    tail -n 5 "$logfile" >&2 || true
  done
  return 1
}

start_engine() {
  engine_answers && return 0
  log "starting dockerd (--bridge=none --iptables=false)"
  launch_dockerd dockerd engine_answers /var/run/docker /var/log/benchflow-dockerd.log \
    --bridge=none --iptables=false
}

apt_mirror() {
  # The Debian archive the machine's apt is configured with (not security, not third-party).
  local uri
  uri=$(grep -rhoE '^(URIs:|deb) +\S+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
        | awk '{print $2}' | grep -E '^https?://' | grep -E '/debian/?$' | head -n1 || true)
  [ -n "$uri" ] || uri=http://deb.debian.org/debian
  printf '%s' "$uri"
}

make_image() {
  # make_image TAG SUITE [EXTRA_PACKAGES]
  local tag=$1 suite=$2 include=${3:-}
  if docker image inspect "$tag" >/dev/null 2>&1; then return 0; fi
  local root
  root=$(mktemp -d /tmp/benchflow-rootfs.XXXXXX)
  log "debootstrap $suite -> $tag (one-time, about a minute)"
  local args=(--variant=minbase)
  [ -n "$include" ] && args+=(--include="$include")
  $SUDO debootstrap "${args[@]}" "$suite" "$root" "$(apt_mirror)" >/tmp/benchflow-debootstrap.log 2>&1 \
    || { tail -n 20 /tmp/benchflow-debootstrap.log >&2; return 1; }
  $SUDO rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  # Like the official python images, pip installs into the system (no PEP 668 marker).
  $SUDO rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
  $SUDO tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["/bin/sh"]' - "$tag" >/dev/null
  $SUDO rm -rf "$root"
}

REMOTE_SOCK=/run/benchflow-remote-docker.sock
REMOTE_HOST=unix://$REMOTE_SOCK
BASE_IMAGES=(debian:bookworm-slim benchflow/python:3.11-bookworm benchflow/python-slim:3.11-bookworm)

remote_answers() { docker -H "$REMOTE_HOST" info >/dev/null 2>&1; }

start_remote_engine() {
  remote_answers && return 0
  log "starting a second dockerd on $REMOTE_HOST"
  $SUDO mkdir -p /var/lib/benchflow-remote-docker /run/benchflow-remote-docker
  launch_dockerd "the second dockerd" remote_answers /run/benchflow-remote-docker \
    /var/log/benchflow-remote-dockerd.log --host=$REMOTE_HOST --data-root=/var/lib/benchflow-remote-docker \
    --bridge=none --iptables=false --ip-masq=false
}

load_remote_images() {
  local image
  for image in "${BASE_IMAGES[@]}"; do
    docker -H "$REMOTE_HOST" image inspect "$image" >/dev/null 2>&1 && continue
    log "loading $image into the second engine"
    docker save "$image" | docker -H "$REMOTE_HOST" load >/dev/null
  done
}

with_images=1
with_remote=0
with_standins=0
for arg in "$@"; do
  case "$arg" in
    --no-images) with_images=0 ;;
    --remote) with_remote=1 ;;
    --standins) with_standins=1 ;;
    *) log "unknown option $arg (use --no-images, --remote, --standins)"; exit 2 ;;
  esac
done

install_packages
start_engine
if [ $with_images = 1 ]; then
  make_image debian:bookworm-slim bookworm
  make_image benchflow/python:3.11-bookworm bookworm python3,python3-pytest
  # Stand-in for python:3.x-slim (the base of most published benchmark tasks): python3 and pip,
  # no pytest; the compatibility fixtures install their test tools the way real tasks do.
  make_image benchflow/python-slim:3.11-bookworm bookworm python3,python3-pip,python3-venv,ca-certificates
fi
if [ $with_standins = 1 ]; then
  make_image benchflow/standin:trixie trixie python3,python3-pip,python3-venv,python-is-python3,curl,ca-certificates,git,procps
  make_image benchflow/standin:bookworm bookworm python3,python3-pip,python3-venv,python-is-python3,curl,ca-certificates,git,procps
fi
log "engine ready: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
if [ $with_remote = 1 ]; then
  start_remote_engine
  [ $with_images = 1 ] && load_remote_images
  log "second engine ready at $REMOTE_HOST (export BENCHFLOW_REMOTE_DOCKER_HOST=$REMOTE_HOST)"
fi
