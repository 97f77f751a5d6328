import sys, time, threading, json
sys.path.insert(0, "/work/main")
T0 = time.monotonic()
log = []
import benchflow.sandbox.engine_api as api
send, hijack = api.EngineClient._send, api.EngineClient.hijack
def ts(method, path):
    parts = [p for p in path.split("?")[0].split("/") if p and not p.startswith("v1.")]
    return f"{method} /" + "/".join(p[:10] for p in parts)
def tsend(self, method, path, *a, **k):
    t = time.monotonic()
    try: return send(self, method, path, *a, **k)
    finally: log.append((t - T0, time.monotonic() - T0, ts(method, path)))
def thij(self, path, *a, **k):
    t = time.monotonic()
    try: return hijack(self, path, *a, **k)
    finally: log.append((t - T0, time.monotonic() - T0, "HIJACK " + ts("POST", path)))
api.EngineClient._send, api.EngineClient.hijack = tsend, thij
import benchflow.jobs.phases as ph
for name in ("environment_phase", "agent_phase", "verifier_phase", "record_phase"):
    fn = getattr(ph, name)
    def mk(fn, name):
        async def w(*a, **k):
            t = time.monotonic()
            try: return await fn(*a, **k)
            finally: log.append((t - T0, time.monotonic() - T0, "PHASE " + name))
        return w
    setattr(ph, name, mk(fn, name))
import benchflow.branch.child as ch, benchflow.branch.trial as bt
ch.agent_phase = ph.agent_phase; ch.verifier_phase = ph.verifier_phase; ch.record_phase = ph.record_phase
bt.environment_phase = ph.environment_phase; bt.record_phase = ph.record_phase; bt.verifier_phase = ph.verifier_phase
from pathlib import Path
import tempfile
sys.path.insert(0, "/work/main/benchmarks")
import branch_overhead as bo
task = Path("/work/main/tests/fixtures/tasks/branch-prompts")
with tempfile.TemporaryDirectory() as tmp:
    bo.fork("docker", Path(tmp) / "w", task)
    log.clear(); T0 = time.monotonic()
    bo.fork("docker", Path(tmp) / "f", task)
    end = time.monotonic() - T0
for a, b, what in sorted(log):
    print(f"{a:6.3f} {b:6.3f} {b-a:6.3f}  {what}")
print("end", round(end, 3))
