"""The probe for a cloud metadata *service* from inside a sandbox that cannot block the endpoints by
construction (:func:`benchflow.sandbox.base.enforce_metadata_block`).

An open port proves nothing: a transparent proxy (corporate networks, many CI machines) accepts a
TCP connection to any address and answers with a 502 or closes. So each endpoint is asked what
its cloud's metadata service answers, and counts as reached only when the answer looks like that
service: status 200 and the service's own header or body shape.

- AWS IMDSv1 (and OpenStack, also at ``169.254.169.254``, and AWS over IPv6 at ``fd00:ec2::254``):
  ``GET /latest/meta-data/`` lists ``instance-id``; IMDSv2: ``PUT /latest/api/token`` answers a
  token with an ``X-Aws-Ec2-Metadata-Token-Ttl-Seconds`` header;
- GCP: ``GET /computeMetadata/v1/`` with ``Metadata-Flavor: Google`` answers with that header;
- Azure: ``GET /metadata/instance?api-version=2021-02-01`` with ``Metadata: true`` is JSON with
  ``compute``; OCI: ``GET /opc/v2/instance/`` with ``Authorization: Bearer Oracle`` is JSON with
  ``compartmentId``;
- ECS task metadata: ``GET /v2/metadata`` at ``169.254.170.2`` is JSON with ``TaskARN``;
- Alibaba Cloud: ``GET /latest/meta-data/`` at ``100.100.100.200`` lists ``instance-id``.

It runs with the sandbox's ``python3`` (all at once, ten seconds at most), else ``bash``'s
``/dev/tcp``. It prints ``reached <service> <address>`` for each service found, ``answered
<address> <status line>`` for an endpoint that answered something else, then ``done``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# (service, address, method, path, header, what the answer must show). Python 3 of any age runs this.
CHECKS = (
    ("aws", "169.254.169.254", "GET", "/latest/meta-data/", "", "line:instance-id"),
    ("aws", "169.254.169.254", "PUT", "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 60",
     "header:x-aws-ec2-metadata-token-ttl-seconds"),
    ("gcp", "169.254.169.254", "GET", "/computeMetadata/v1/", "Metadata-Flavor: Google",
     "header:metadata-flavor=google"),
    ("azure", "169.254.169.254", "GET", "/metadata/instance?api-version=2021-02-01", "Metadata: true", "json:compute"),
    ("oci", "169.254.169.254", "GET", "/opc/v2/instance/", "Authorization: Bearer Oracle", "json:compartmentId"),
    ("ecs", "169.254.170.2", "GET", "/v2/metadata", "", "json:TaskARN"),
    ("aws", "fd00:ec2::254", "GET", "/latest/meta-data/", "", "line:instance-id"),
    ("alibaba", "100.100.100.200", "GET", "/latest/meta-data/", "", "line:instance-id"),
)

PROBE_PY = """
import json, socket, sys, threading, time
CHECKS = %r
found = []

def ask(address, method, path, header):
    sock = socket.create_connection((address, 80), timeout=3)
    try:
        host = "[%%s]" %% address if ":" in address else address
        extra = header + "\\r\\n" if header else ""
        sock.sendall(("%%s %%s HTTP/1.0\\r\\nHost: %%s\\r\\n%%s\\r\\n" %% (method, path, host, extra)).encode())
        data = b""
        while len(data) < 1 << 20:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    head, _, body = data.partition(b"\\r\\n\\r\\n")
    lines = head.decode("latin-1").split("\\r\\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return lines[0], headers, body.decode("utf-8", "replace")

def looks_like(status, headers, body, want):
    parts = status.split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or parts[1] != "200":
        return False
    kind, _, what = want.partition(":")
    if kind == "line":
        return what in [line.strip() for line in body.splitlines()]
    if kind == "header":
        name, _, value = what.partition("=")
        return name in headers and (not value or headers[name].lower() == value)
    try:
        doc = json.loads(body)
    except ValueError:
        return False
    return isinstance(doc, dict) and what in doc

def check(service, address, method, path, header, want):
    try:
        status, headers, body = ask(address, method, path, header)
    except (OSError, ValueError):
        return
    if looks_like(status, headers, body, want):
        found.append("reached %%s %%s" %% (service, address))
    else:
        found.append("answered %%s %%s" %% (address, status[:80] or "(nothing)"))

threads = [threading.Thread(target=check, args=c) for c in CHECKS]
for t in threads:
    t.daemon = True
    t.start()
deadline = time.time() + 10
for t in threads:
    t.join(max(0, deadline - time.time()))
print("\\n".join(sorted(set(found[:]))))
print("done")
""" % (CHECKS,)

PROBE_SH = r"""
nap() { sleep "$1" 2>/dev/null || read -rt "$1" <> <(:) || :; }
check() {
  service=$1 address=$2 method=$3 path=$4 header=$5 want=$6 status= head=1 ok=
  case $address in *:*) host="[$address]" ;; *) host=$address ;; esac
  exec 3<>"/dev/tcp/$address/80" || return 0
  [ -n "$header" ] && header="$header"$'\r\n'
  printf '%s %s HTTP/1.0\r\nHost: %s\r\n%s\r\n' "$method" "$path" "$host" "$header" >&3
  while IFS= read -r -t 3 line <&3 || [ -n "$line" ]; do
    line=${line%$'\r'}
    if [ -z "$status" ]; then status=$line
    elif [ -n "$head" ]; then
      lower=${line,,}
      case $want in
        header:*=*) name=${want#header:}; [ "$lower" = "${name%%=*}: ${name#*=}" ] && ok=1 ;;
        header:*) case $lower in "${want#header:}":*) ok=1 ;; esac ;;
      esac
      [ -z "$line" ] && head=
    else
      case $want in
        line:*) [ "$line" = "${want#line:}" ] && ok=1 ;;
        json:*) case $line in *\"${want#json:}\"*) ok=1 ;; esac ;;
      esac
    fi
    line=
  done
  exec 3<&-
  case $status in "HTTP/"*" 200"*) ;; *) ok= ;; esac
  if [ -n "$ok" ]; then echo "reached $service $address"
  else echo "answered $address ${status:0:80}"; fi
}
pids=
@CHECKS@
start=$SECONDS
while [ $((SECONDS - start)) -lt 10 ]; do
  alive=; for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ -n "$alive" ] || break
  nap 0.2
done
for p in $pids; do kill "$p" 2>/dev/null; done
echo done
"""


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


PROBE_SH = PROBE_SH.replace("@CHECKS@", "\n".join(
    "check " + " ".join(_sh_quote(v) for v in c) + ' & pids="$pids $!"' for c in CHECKS))
LAUNCH = ('command -v python3 >/dev/null 2>&1 && exec python3 -c "$0"; '
          'command -v bash >/dev/null 2>&1 && exec bash -c "$1"; echo no-probe')


@dataclass
class ProbeResult:
    """What the probe found: services that answered as themselves, endpoints that answered otherwise."""

    reached: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    ran: bool = True
    note: str = ""

    def summary(self) -> str:
        if not self.ran:
            return self.note
        if self.reached:
            return "; ".join(self.reached)
        return "; ".join(self.other) if self.other else "nothing answered"


def parse(stdout: str, return_code: int) -> ProbeResult:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if "done" not in lines:
        tail = lines[-1][:200] if lines else f"rc={return_code}"
        return ProbeResult(ran=False, note=tail)
    result = ProbeResult()
    for line in dict.fromkeys(lines):
        word, _, rest = line.partition(" ")
        if word == "reached":
            service, _, address = rest.partition(" ")
            result.reached.append(f"{service} metadata at {address}")
        elif word == "answered":
            result.other.append(f"{rest[:120]} (not a metadata service)")
    return result


async def probe(sandbox: Any) -> ProbeResult:
    """Run the probe in ``sandbox`` (as root, so the sandbox user's own settings play no part)."""
    done = await sandbox.exec(["sh", "-c", LAUNCH, PROBE_PY, PROBE_SH], timeout=60)
    return parse(done.stdout, done.return_code)
