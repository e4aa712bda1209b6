"""The cost of one cluster-check request sent from a server host over ssh (testbeds/cluster.http_over_ssh), with a new
ssh connection per request against the shared connection it keeps (ControlMaster), on a lab of namespace hosts.

  env/shell python testbeds/bench/http_over_ssh.py [--requests 20] [--max-ratio 0.75] [--id b47] [--subnet 10.77.48.0/24]

Each request goes to a closed port on a lab host, so what is timed is ssh and the helper's python3 start-up only.
Prints both medians and their ratio. Criterion: the shared connection's median at most 0.75 x the other's; exit 0
when it holds, 1 when not. The lab is removed at the end, also on failure.
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testbeds import cluster, deploy, inventory, lab, remote  # noqa: E402

MAX_RATIO = 0.75


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--id", default="b47")
    ap.add_argument("--subnet", default="10.77.48.0/24")
    ap.add_argument("--max-ratio", type=float, default=MAX_RATIO, help="the criterion's bound (default %(default)s)")
    a = ap.parse_args()
    path = lab.up(a.id, 3, 1, a.subnet, log=lambda m: None)
    try:
        inv = inventory.load(path)
        host = inv.servers[0]
        deploy.install_hostside(Path(host.work_dir) / "lib")
        url = f"http://{inv.servers[1].address}:1/"
        helper = f"python3 {shlex.quote(str(Path(host.work_dir) / 'lib' / 'sbnode.py'))} http "
        req = shlex.quote(json.dumps({"method": "GET", "url": url, "timeout": 2}))

        def timed(send) -> list[float]:
            out = []
            for _ in range(a.requests):
                t = time.monotonic()
                send()
                out.append(time.monotonic() - t)
            return out

        apart = timed(lambda: remote.ssh(host, helper + req, timeout=60))
        shared_send = cluster.http_over_ssh(inv)
        shared = timed(lambda: shared_send("GET", url, None, 2))
    finally:
        lab.down(a.id, log=lambda m: None)
    m_apart, m_shared = statistics.median(apart), statistics.median(shared)
    ratio = m_shared / m_apart
    print(f"{a.requests} requests each, lab {a.id}: a connection per request median {m_apart * 1000:.0f} ms "
          f"(max {max(apart) * 1000:.0f}); shared connection median {m_shared * 1000:.0f} ms "
          f"(max {max(shared) * 1000:.0f}, the first opens it)")
    ok = ratio <= a.max_ratio
    print(f"criterion: shared / per-request median {ratio:.2f} <= {a.max_ratio}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
