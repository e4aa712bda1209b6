"""End-to-end check of the lab (env/test): 3 servers + 1 client, one Kafka and one Pulsar cell at L1 (the ci
scale's E000-LAT1 workload, a few seconds each) through workloads/run.py's hooks, 0 lost / 0 duplicated; then fault
cells at L1 through workloads/faultrun.py on the hosts (default: Pulsar crash-all, its nodes on three hosts restarted
stage by stage), 0 acknowledged messages lost at L1 (a hold fault such as kafka:partition-leader@L4 reports its
count); after each fault run no nftables table and no stopped process on any host; optionally one hold-fault cell
Ctrl-C'd while its partition is on, which must stop its cluster and leave nothing; then no namespace, sshd, broker
or runner left. With --ec2-like the lab is as unkind as a fleet (`lab up --ec2-like --login-user`): the controller
reaches the hosts only over ssh at their public addresses, as a user with sudo, so every check, verification and
fault client goes through the hosts; the login user must be gone afterwards too.

  python -m testbeds.labtest [--id t12] [--subnet 10.77.0.0/24] [--out data/runs/labtest] [--systems kafka,pulsar]
                             [--faults pulsar:crash-all,kafka:kill-one] [--interrupt kafka:partition-leader@L1]
                             [--ec2-like]
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import deploy, lab
from .inventory import load
from .remote import control_path_dirs
from workloads.plan import HOLD_FAULTS
from .util import TestbedError, root

WORKLOAD = "1-topic-100-partitions-1kb-2p-2c-200k"


def say(msg: str) -> None:
    print(f"[labtest] {msg}", flush=True)


def _run(module: str, key: str, system: str, tuning: str, args: list[str], out: Path, inv_path: Path,
         level: str = "L1", interrupt_when=None) -> dict:
    """One run of `python -m MODULE` (workloads.run or workloads.faultrun) on the lab's hosts; its status record with
    the seconds it took. With `interrupt_when` (a function polled every 0.2 s): Ctrl-C (SIGINT) to the run once it
    returns true, as a user at the terminal would; the record then says when (`interruptedAfter`, None if never)."""
    cmd = [sys.executable, "-m", module, "--clusters", str(out / "clusters"), "--inventory", str(inv_path),
           "--testbed", "labtest", "--scale", "ci", "--system", system, "--level", level, "--tuning", tuning,
           "--rep", "1", "--default-tuning", "tuned", *args,
           "--driver", str(root() / "workloads" / "drivers" / f"{system}-{level}-{tuning}.yaml"),
           "--result", str(out / "raw" / f"{key}.json"), "--status", str(out / "status" / f"{key}.json"),
           "--log", str(out / "logs" / f"{key}.log")]
    t0 = time.monotonic()
    if interrupt_when is None:
        subprocess.run(cmd, cwd=root(), check=True, timeout=900)
        rec = json.loads((out / "status" / f"{key}.json").read_text())
    else:
        p = subprocess.Popen(cmd, cwd=root())
        at = None
        try:
            while p.poll() is None and time.monotonic() - t0 < 900:
                if at is None and interrupt_when():
                    p.send_signal(signal.SIGINT)
                    at = round(time.monotonic() - t0, 1)
                time.sleep(0.2)
            p.wait(60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        rec = json.loads((out / "status" / f"{key}.json").read_text())
        rec["interruptedAfter"], rec["exitCode"] = at, p.returncode
    rec["seconds"] = round(time.monotonic() - t0, 1)
    return rec


def cell(system: str, out: Path, inv_path: Path) -> dict:
    return _run("workloads.run", f"{system}/L1/{WORKLOAD}/rep-1", system, "tuned",
                ["--workload", WORKLOAD, "--in-experiments", "E000-LAT1"], out, inv_path)


def fault_cell(system: str, fault: str, out: Path, inv_path: Path, level: str = "L1", rep: int = 1,
               interrupt_when=None) -> dict:
    """One fault run on the lab's hosts at the ci scale: a kill fault with E000-FAULTCI's workload and timing, a
    hold fault (partition, pause) with E000-FAULTHOLD's."""
    wl = "1-topic-8-partitions-1kb-1p-1c-2k"
    exp = "E000-FAULTHOLD" if fault in HOLD_FAULTS else "E000-FAULTCI"
    return _run("workloads.faultrun", f"{system}/{level}+stock/{wl}--{fault}/rep-{rep}", system, "stock",
                ["--workload", wl, "--fault", fault, "--in-experiments", exp], out, inv_path, level,
                interrupt_when=interrupt_when)


def fault_tables(ns: str) -> tuple[list[str], str | None]:
    """The fault hooks' nftables tables (`inet sbfault_*`) in the namespace `ns`, and nft's error if it failed."""
    from systems.faulthook import nft_path  # the same lookup the hook uses
    r = subprocess.run(["ip", "netns", "exec", ns, nft_path() or "nft", "list", "tables"], capture_output=True,
                       text=True, timeout=30)
    return ([t.strip() for t in r.stdout.splitlines() if "sbfault_" in t],
            None if r.returncode == 0 else r.stderr.strip())


def partitioned(inv) -> bool:
    """A fault hook's nftables table is in place in some host's namespace (the partition is on)."""
    return any(fault_tables(ns)[0] for ns in inv.provider["netns"].values())


def server_java(inv) -> list[str]:
    """The java processes still running on the lab's hosts (a stopped cluster has none)."""
    out = []
    for h, ns in inv.provider["netns"].items():
        for pid in lab.netns_pids(ns):
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                    out.append(f"host {h}: java {pid}")
            except OSError:
                pass
    return out


# what a JVM leaves in the temp directory when it is killed (the lab's hosts share this machine's /tmp): the
# launcher points every node's java.io.tmpdir at the node's directory and turns perf data off (systems/plan.py)
JVM_TMP = ("native*", "vertx-cache-*", "librocksdbjni*", "hsperfdata_sbl*")


def tmp_entries() -> set[str]:
    return {p.name for g in JVM_TMP for p in Path("/tmp").glob(g)}


def leftovers(state: dict) -> list[str]:
    """What of the lab still exists: namespaces, sshd processes, processes in its namespaces, the ssh control
    sockets' directory, what its JVMs put in /tmp."""
    out = [f"namespace {n}" for n in lab.netns_list() if n.startswith(f"{lab.PREFIX}-{state['id']}-")]
    out += [f"ssh control directory {cp}" for cp in control_path_dirs("lab", state["id"])]
    out += [f"/tmp/{n}" for n in sorted(tmp_entries() - state.get("tmp", set()))]
    for pid in state.get("pids", []):
        if Path(f"/proc/{pid}").exists():
            try:
                st = Path(f"/proc/{pid}/stat").read_text()
                if st[st.rindex(")") + 2] != "Z":
                    out.append(f"process {pid} ({st[st.index('(') + 1:st.rindex(')')]})")
            except OSError:
                pass
    return out


def fault_qdiscs(ns: str) -> tuple[list[str], str | None]:
    """The token buckets (tc tbf, a slow link's) in the namespace `ns`, and tc's error if it failed."""
    from systems.faulthook import tc_path
    r = subprocess.run(["ip", "netns", "exec", ns, tc_path() or "tc", "qdisc", "show"], capture_output=True,
                       text=True, timeout=30)
    return ([q.strip() for q in r.stdout.splitlines() if q.startswith("qdisc tbf ")],
            None if r.returncode == 0 else r.stderr.strip())


def fault_leftovers(inv) -> list[str]:
    """What a fault run may not leave on the hosts while the cluster lives on: a fault hook's nftables table
    (`inet sbfault_*`) or token bucket (tc tbf) in a host's namespace, or a process still stopped (state T) by a
    pause."""
    out = []
    for h, ns in inv.provider["netns"].items():
        tables, err = fault_tables(ns)
        if err is not None:
            out.append(f"host {h}: nft list tables failed: {err}")
        out += [f"host {h}: nft table '{t}'" for t in tables]
        qdiscs, err = fault_qdiscs(ns)
        if err is not None:
            out.append(f"host {h}: tc qdisc show failed: {err}")
        out += [f"host {h}: token bucket '{q}'" for q in qdiscs]
        for pid in lab.netns_pids(ns):
            try:
                st = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if st[st.rindex(")") + 2] in "Tt":
                out.append(f"host {h}: process {pid} ({st[st.index('(') + 1:st.rindex(')')]}) is stopped")
    return out


def host_faultfs_mounts(inv) -> list[str]:
    """faultfs mounts still in the hosts' mount namespaces (each sshd's, made by `ip netns exec`; this namespace never
    sees them): after the clusters are down there must be none."""
    out = set()
    for h, ns in inv.provider["netns"].items():
        for pid in lab.netns_pids(ns):
            try:
                info = Path(f"/proc/{pid}/mountinfo").read_text()
            except OSError:
                continue
            for line in info.splitlines():
                left, _, right = line.partition(" - ")
                if right.split()[:1] == ["fuse.faultfs"]:
                    out.add(f"host {h}: faultfs mount {left.split()[4]}")
    return sorted(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--id", default="t12")
    ap.add_argument("--subnet", default="10.77.0.0/24")
    ap.add_argument("--out", type=Path, default=root() / "data" / "runs" / "labtest")
    ap.add_argument("--systems", default="kafka,pulsar")
    ap.add_argument("--faults", default="pulsar:crash-all",
                    help="SYSTEM:FAULT[@LEVEL],... fault cells, at L1 unless a level is given ('' for none)")
    ap.add_argument("--interrupt", default="",
                    help="SYSTEM:FAULT[@LEVEL]: a hold-fault cell interrupted (SIGINT) while its partition is on; it "
                         "must end failed ('interrupted') with its cluster stopped, no nft table and no stopped "
                         "process left ('' for none)")
    ap.add_argument("--ec2-like", action="store_true",
                    help="the lab as a fleet is (lab up --ec2-like --login-user): the controller has no route to the "
                         "hosts' private addresses, logs in as a user with sudo, knows no host key; every check, "
                         "verification and fault client goes through the hosts")
    a = ap.parse_args(argv)
    # SYSTEM:FAULT[@LEVEL] (L1 unless given): every L1 cell must lose nothing; another level's count is reported
    faults = [(x.split(":", 1)[0], *(x.split(":", 1)[1].split("@", 1) + ["L1"])[:2]) for x in a.faults.split(",") if x]
    shutil.rmtree(a.out, ignore_errors=True)
    failures = []
    seen = {"id": a.id, "pids": [], "tmp": tmp_entries()}
    t0 = time.monotonic()
    try:
        inv_path = lab.up(a.id, 3, 1, a.subnet, log=say, login_user=a.ec2_like, ec2_like=a.ec2_like)
        inv = load(inv_path)
        d = Path(inv.provider["dir"])
        seen["pids"] += [int(Path(f).read_text().split()[0]) for f in inv.provider["sshdPidFiles"].values()]
        tp = time.monotonic()
        systems = ",".join(dict.fromkeys([s for s in a.systems.split(",") if s] + [s for s, _, _ in faults]))
        subprocess.run([sys.executable, "-m", "testbeds", "prepare", "--inventory", str(inv_path), "--systems",
                        systems], check=True, cwd=root(), timeout=1800)
        say(f"prepared in {time.monotonic() - tp:.0f} s")
        for system in [s for s in a.systems.split(",") if s]:
            rec = cell(system, a.out, inv_path)
            au = rec.get("audit") or {}
            say(f"{system} L1: {rec['status']} in {rec['seconds']} s, sent {au.get('sent')}, lost {au.get('lost')}, "
                f"duplicated {au.get('duplicated')}" + (f": {rec.get('error', '').splitlines()[0]}"
                                                       if rec["status"] != "ok" else ""))
            if rec["status"] != "ok" or au.get("lost") != 0 or au.get("duplicated") != 0:
                failures.append(f"{system} L1 cell: {rec['status']} lost={au.get('lost')} dup={au.get('duplicated')}")
            elif not Path(rec["result"]).is_file() or not Path(rec["result"]).with_suffix(".parts").is_dir():
                failures.append(f"{system} L1 cell: no result or no parts beside {rec['result']}")
            else:
                # the host sampler sees the hosts' namespaces: the brokers' and the runner's CPU are theirs, not
                # "other work", and the brokers' GC logs on the server hosts are read
                host = rec.get("host") or {}
                say(f"{system} L1: cluster {host.get('clusterCores')} cores, runner {host.get('runnerCores')}, "
                    f"other {host.get('foreignCores')}; max GC pause {rec.get('maxGcPauseMs')} ms")
                if not (host.get("clusterCores") or 0) > 0 or not (host.get("runnerCores") or 0) > 0:
                    failures.append(f"{system} L1 cell: the lab's cluster or runner CPU was not attributed: {host}")
                if rec.get("maxGcPauseMs") is None:
                    failures.append(f"{system} L1 cell: no GC log of the server hosts' brokers was read")
        for system, fault, level in faults:
            rec = fault_cell(system, fault, a.out, inv_path, level)
            f = rec.get("fault") if isinstance(rec.get("fault"), dict) else {}
            say(f"{system} {level} {fault}: {rec['status']} in {rec['seconds']} s, {f.get('lost')} lost of "
                f"{f.get('acknowledged')} acknowledged, targets {f.get('targets')}"
                + (f": {rec.get('error', '').splitlines()[0]}" if rec["status"] != "ok" else ""))
            if rec["status"] != "ok" or not f.get("acknowledged") or (level == "L1" and f.get("lost") != 0):
                failures.append(f"{system} {level} {fault}: {rec['status']} lost={f.get('lost')} "
                                f"acknowledged={f.get('acknowledged')} {rec.get('error', '')}".strip())
            # healed and resumed: no nft table and no stopped process outlives the fault run
            failures += [f"{system} {level} {fault}: left after the run: {x}" for x in fault_leftovers(inv)]
        if a.interrupt:
            system, fault = a.interrupt.split(":", 1)
            fault, level = (fault.split("@", 1) + ["L1"])[:2]
            # rep 2: the key's cluster, if an earlier cell left it, takes this as its next cycle
            rec = fault_cell(system, fault, a.out, inv_path, level, rep=2, interrupt_when=lambda: partitioned(inv))
            say(f"{system} {level} {fault} interrupted after {rec.get('interruptedAfter')} s: {rec['status']} "
                f"({rec.get('reason')}), exit {rec.get('exitCode')}, in {rec['seconds']} s")
            if rec.get("interruptedAfter") is None:
                failures.append(f"{a.interrupt}: the partition never came on, so nothing was interrupted")
            elif rec["status"] != "failed" or rec.get("reason") != "interrupted" or rec.get("exitCode") == 0:
                failures.append(f"{a.interrupt}: after SIGINT the run ended {rec['status']} ({rec.get('reason')}), "
                                f"exit {rec.get('exitCode')}; want failed (interrupted), non-zero")
            failures += [f"{a.interrupt} interrupted: left after the run: {x}" for x in fault_leftovers(inv)]
            failures += [f"{a.interrupt} interrupted: its cluster still runs: {x}" for x in server_java(inv)]
        # no --inventory: the cluster left running is stopped through the inventory it recorded
        subprocess.run([sys.executable, "-m", "workloads.run", "--clusters", str(a.out / "clusters"), "--down-all"],
                       cwd=root(), check=True, timeout=600)
        failures += [f"left after the clusters were stopped: {x}" for x in host_faultfs_mounts(inv)]
        # after the clusters are down only the sshds (and their sessions) may be left in the host namespaces
        for h, ns in inv.provider["netns"].items():
            for pid in lab.netns_pids(ns):
                try:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    continue
                seen["pids"].append(pid)
                if comm != "sshd":
                    failures.append(f"host {h}: process {pid} ({comm}) left after the clusters were stopped")
    except (TestbedError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        failures.append(str(e))
    finally:
        try:
            lab.down(a.id, log=say)
        except TestbedError as e:
            failures.append(str(e))
    left = leftovers(seen)
    if a.ec2_like and subprocess.run(["id", lab.login_user_name(a.id)], capture_output=True).returncode == 0:
        left.append(f"login user {lab.login_user_name(a.id)}")
    failures += [f"left after lab down: {x}" for x in left]
    say(f"done in {time.monotonic() - t0:.0f} s")
    for f in failures:
        print(f"labtest: FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
