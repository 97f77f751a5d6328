import os, sys, time, tempfile, statistics
from pathlib import Path
sys.path.insert(0, "/work/main/benchmarks")
import branch_overhead as bo
task = Path(sys.argv[1]); variants = sys.argv[2].split(","); n = int(sys.argv[3])
res = {v: [] for v in variants}
with tempfile.TemporaryDirectory() as tmp:
    bo.fork("docker", Path(tmp) / "w", task)
    for r in range(n):
        for v in variants:
            os.environ["XSTART"] = v
            res[v].append(bo.fork("docker", Path(tmp) / f"f{v}{r}", task))
for v in variants:
    print(v, round(statistics.median(res[v]), 3), [round(x, 2) for x in res[v]])
