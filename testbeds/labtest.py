"""End-to-end check of the lab (env/test): 3 servers + 1 client, one Kafka and one Pulsar cell at L1 (the ci
scale's E000-LAT1 workload, a few seconds each) through workloads/run.py's hooks, 0 lost / 0 duplicated; then fault
cells at L1 through workloads/faultrun.py on the hosts (default: Pulsar crash-all, its nodes on three hosts restarted
stage by stage), 0 acknowledged messages lost at L1 (a hold fault such as kafka:partition-leader@L4 reports its
count); after each fault run no nftables table and no stopped process on any host; optionally one hold-fault cell
Ctrl-C'd while its partition is on, which must stop its cluster and leave nothing; then no namespace, sshd, broker
or runner left. With --ec2-like the lab is as unkind as a fleet (`lab up --ec2-like --login-user`): the controller
reaches the hosts only over ssh at their public addresses, as a user with sudo, so every check, verification and
fault client goes through the hosts; prepare must hand each host's work directory and a server's data directories to
the login user (the hosts' roots stay root's), the cluster an interrupted cell reuses must run as that user, and the
user, its sudoers file and its JVMs' perf-data directory must be gone afterwards. With --hosts-profile the plain
cells (E000-LAT1's workload at L1, as this check's own experiment) are runs of `snakemake --profile hosts benchmarks`
on the lab's inventory (adopt, prepare, probes, the runs: a user's own machines' path), checked by
workloads.summary --check.

  python -m testbeds.labtest [--id t12] [--subnet 10.77.0.0/24] [--out data/runs/labtest] [--systems kafka,pulsar]
                             [--faults pulsar:crash-all,kafka:kill-one] [--interrupt kafka:partition-leader@L1]
                             [--ec2-like] [--hosts-profile]
"""
from __future__ import annotations

import argparse
import json
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

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


# `--hosts-profile`: the plain cells go through `snakemake --profile hosts benchmarks`, the path of a user's own
# machines, with the lab's inventory in place of theirs (docs/hosts.md); its data directories are that profile's own
HOSTS_DATA = ("data/runs/hosts", "data/raw/hosts", "logs/hosts")
HOSTS_MARK = "data/runs/hosts/labtest.json"  # marks data/runs/hosts as this check's, so a rerun may replace it
HOSTS_EXPERIMENT = "E000-LABCHECK"  # its own experiment, written into a copy of workloads/experiments.yaml


def hosts_experiments_file(out: Path, systems: list[str]) -> Path:
    """workloads/experiments.yaml with one experiment more, this check's: E000-LAT1's workload at L1 only, on the
    --systems (study 000's own experiments name Kafka and Pulsar only, so Pravega has no ci-scale run there)."""
    doc = yaml.safe_load((root() / "workloads" / "experiments.yaml").read_text())
    lat1 = doc["experiments"]["E000-LAT1"]
    doc["experiments"][HOSTS_EXPERIMENT] = {
        "study": lat1["study"], "title": f"The lab check's plain cells: {lat1['title']}, L1 only",
        "workloads": list(lat1["workloads"]), "levels": ["L1"], "systems": list(systems)}
    path = out / "experiments.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def hosts_profile_command(inv_path: Path, systems: list[str], experiments: Path) -> list[str]:
    """`snakemake --profile hosts benchmarks` on this inventory at the ci scale: the --systems' L1 cell of E000-LAT1's
    workload (HOSTS_EXPERIMENT) after adopt, prepare and the probes at the ci profile's sizes, up to the runs' summary.
    Not `all`: its analysis and paper write the same files in this directory as the AWS rehearsal's, which env/test
    runs beside this check (Snakemake would refuse the second workflow), and the ci run and the rehearsal check them.
    A --config replaces the profile's whole `config:` block (env/profiles/hosts/config.yaml), so the testbed is named
    again."""
    return ["snakemake", "--profile", "hosts", "benchmarks", "--config", "testbed=hosts",
            f"testbeds={{hosts: {{inventory: {inv_path}}}}}",
            f"workloads={{scale: ci, experiments_file: {experiments}, systems: [{', '.join(systems)}], "
            f"experiments: [{HOSTS_EXPERIMENT}]}}",
            "hw_probes={host: controller, dd_size_mb: 16, fio_size_mb: 16, fio_fsync_size_mb: 2, fio_runtime_s: 5}",
            "analysis={bootstrap_resamples: 200}"]


def hosts_profile_run(inv_path: Path, systems: list[str], out: Path) -> tuple[list[str], dict]:
    """The hosts profile's DAG on the lab: adopt, prepare (every system, as the fault cells need), probes, the runs and
    their summary, the last cluster stopped. Returns the failures and, per system, its L1 cell's status record. Data
    of a real `--profile hosts` run are never removed: without this check's mark, data/runs/hosts stops it in one
    line. Its experiments file and log go under `out` (the check's own directory)."""
    rootp = root()
    if (rootp / HOSTS_DATA[0]).exists() and not (rootp / HOSTS_MARK).exists():
        raise TestbedError(f"{HOSTS_DATA[0]}: holds a --profile hosts run that is not this check's ({HOSTS_MARK} "
                           "is missing); move it away first, the check would replace it")
    for d in HOSTS_DATA:
        shutil.rmtree(rootp / d, ignore_errors=True)
    (rootp / HOSTS_MARK).parent.mkdir(parents=True, exist_ok=True)
    (rootp / HOSTS_MARK).write_text(json.dumps({"labtest": str(inv_path)}) + "\n")
    log_path = out / "logs" / "hosts-profile.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = hosts_profile_command(inv_path, systems, hosts_experiments_file(out, systems))
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        rc = subprocess.run(cmd, cwd=rootp, stdout=log, stderr=subprocess.STDOUT, timeout=3600).returncode
    say(f"snakemake --profile hosts benchmarks: exit {rc} in {time.monotonic() - t0:.0f} s (log: {log_path})")
    failures = [] if rc == 0 else [f"snakemake --profile hosts benchmarks: exit {rc} (log: {log_path})"]
    bench = rootp / HOSTS_DATA[0] / "benchmarks.json"
    check = subprocess.run([sys.executable, "-m", "workloads.summary", "--check", str(bench)], cwd=rootp,
                           capture_output=True, text=True)
    say(f"workloads.summary --check {HOSTS_DATA[0]}/benchmarks.json: exit {check.returncode}")
    if check.returncode != 0:
        failures.append(f"--profile hosts runs: {(check.stderr or check.stdout).strip().splitlines()[-1:]}")
    records = {}
    for system in systems:
        st = rootp / HOSTS_DATA[0] / "status" / system / "L1" / WORKLOAD / "rep-1.json"
        if st.is_file():
            records[system] = json.loads(st.read_text())
        else:
            failures.append(f"--profile hosts: no status record {st.relative_to(rootp)}")
    return failures, records


def cell(system: str, out: Path, inv_path: Path) -> dict:
    return _run("workloads.run", f"{system}/L1/{WORKLOAD}/rep-1", system, "tuned",
                ["--workload", WORKLOAD, "--in-experiments", "E000-LAT1"], out, inv_path)


def fault_cell(system: str, fault: str, out: Path, inv_path: Path, level: str = "L1", rep: int = 1,
               interrupt_when=None, keep_cluster: bool = False) -> dict:
    """One fault run on the lab's hosts at the ci scale: a kill fault with E000-FAULTCI's workload and timing, a
    hold fault (partition, pause) with E000-FAULTHOLD's. With `keep_cluster`, a cycle that ends well leaves its
    cluster for the next run of the same cell (as the workflow's repetitions do)."""
    wl = "1-topic-8-partitions-1kb-1p-1c-2k"
    exp = "E000-FAULTHOLD" if fault in HOLD_FAULTS else "E000-FAULTCI"
    return _run("workloads.faultrun", f"{system}/{level}+stock/{wl}--{fault}/rep-{rep}", system, "stock",
                ["--workload", wl, "--fault", fault, "--in-experiments", exp]
                + (["--keep-cluster"] if keep_cluster else []), out, inv_path, level, interrupt_when=interrupt_when)


def check_cell(system: str, rec: dict) -> list[str]:
    """A plain L1 cell on the lab's hosts: ok, 0 lost, 0 duplicated, its result and parts written, and the host
    sampler attributed the brokers' and the runner's CPU (the hosts' namespaces) and read the brokers' GC logs."""
    au = rec.get("audit") or {}
    took = f" in {rec['seconds']} s" if "seconds" in rec else ""
    say(f"{system} L1: {rec['status']}{took}, sent {au.get('sent')}, lost {au.get('lost')}, "
        f"duplicated {au.get('duplicated')}" + (f": {rec.get('error', '').splitlines()[0]}"
                                               if rec["status"] != "ok" else ""))
    if rec["status"] != "ok" or au.get("lost") != 0 or au.get("duplicated") != 0:
        return [f"{system} L1 cell: {rec['status']} lost={au.get('lost')} dup={au.get('duplicated')}"]
    result = root() / rec["result"]
    if not result.is_file() or not result.with_suffix(".parts").is_dir():
        return [f"{system} L1 cell: no result or no parts beside {rec['result']}"]
    host = rec.get("host") or {}
    say(f"{system} L1: cluster {host.get('clusterCores')} cores, runner {host.get('runnerCores')}, "
        f"other {host.get('foreignCores')}; max GC pause {rec.get('maxGcPauseMs')} ms")
    failures = []
    if not (host.get("clusterCores") or 0) > 0 or not (host.get("runnerCores") or 0) > 0:
        failures.append(f"{system} L1 cell: the lab's cluster or runner CPU was not attributed: {host}")
    if rec.get("maxGcPauseMs") is None:
        failures.append(f"{system} L1 cell: no GC log of the server hosts' brokers was read")
    return failures


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


def host_java(inv) -> list[tuple[str, int]]:
    """(host, pid) of each java process running on the lab's hosts."""
    out = []
    for h, ns in inv.provider["netns"].items():
        for pid in lab.netns_pids(ns):
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                    out.append((h, pid))
            except OSError:
                pass
    return out


def server_java(inv) -> list[str]:
    """The java processes still running on the lab's hosts (a stopped cluster has none)."""
    return [f"host {h}: java {pid}" for h, pid in host_java(inv)]


def not_handed_over(inv, uid: int) -> list[str]:
    """EC2-like (a login user who escalates with sudo): what prepare did not hand to the login user. It makes each
    host's work directory and a server's data directories with sudo and gives them to that user; the host's root
    stays root's."""
    out = []
    for h in inv.hosts:
        dirs = [("work directory", h.work_dir)] + ([(f"data directory {r}", d) for r, d in sorted(h.data_dirs.items())]
                                                  if "server" in h.roles else [])
        try:
            if Path(h.root).stat().st_uid != 0:
                out.append(f"host {h.name}: its root {h.root} is not root's")
            out += [f"host {h.name}: {what} {d} is uid {Path(d).stat().st_uid}'s, not the login user's ({uid})"
                    for what, d in dirs if Path(d).stat().st_uid != uid]
        except OSError as e:
            out.append(f"host {h.name}: {e}")
    return out


def java_not_of(inv, uid: int) -> tuple[int, list[str]]:
    """The java processes on the lab's hosts, and those of them not run by the login user `uid` (EC2-like: every
    node runs as that user, started over ssh as it)."""
    n, out = 0, []
    for h, pid in host_java(inv):
        try:
            owner = Path(f"/proc/{pid}").stat().st_uid
        except OSError:  # ended meanwhile
            continue
        n += 1
        if owner != uid:
            out.append(f"host {h}: java {pid} runs as uid {owner}, not the login user's ({uid})")
    return n, out


# what a JVM leaves in the temp directory when it is killed (the lab's hosts share this machine's /tmp): the
# launcher points every node's java.io.tmpdir at the node's directory and turns perf data off (systems/plan.py)
JVM_TMP = ("native*", "vertx-cache-*", "librocksdbjni*", "hsperfdata_sbl*")


def tmp_entries(uid: int | None = None) -> set[str]:
    """What JVMs leave in /tmp; with `uid`, only what that user owns: an EC2-like lab's JVMs run as its own login
    user, so another lab's or workflow's beside this check (env/test runs the AWS rehearsal beside it) is not
    counted as this lab's."""
    out = set()
    for p in (p for g in JVM_TMP for p in Path("/tmp").glob(g)):
        try:
            if uid is None or p.lstat().st_uid == uid:
                out.add(p.name)
        except OSError:  # gone meanwhile
            pass
    return out


def leftovers(state: dict) -> list[str]:
    """What of the lab still exists: namespaces, sshd processes, processes in its namespaces, the ssh control
    sockets' directory, what its JVMs put in /tmp."""
    out = [f"namespace {n}" for n in lab.netns_list() if n.startswith(f"{lab.PREFIX}-{state['id']}-")]
    out += [f"ssh control directory {cp}" for cp in control_path_dirs("lab", state["id"])]
    out += [f"/tmp/{n}" for n in sorted(tmp_entries(state.get("uid")) - state.get("tmp", set()))]
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
    ap.add_argument("--hosts-profile", action="store_true",
                    help="prepare the hosts and run the --systems' plain cells through `snakemake --profile hosts "
                         "benchmarks` on the lab's inventory (a user's own machines' path: adopt, prepare, probes, "
                         "E000-LAT1's workload at L1), its runs checked by workloads.summary --check, instead of one "
                         "workloads.run cell each")
    a = ap.parse_args(argv)
    # SYSTEM:FAULT[@LEVEL] (L1 unless given): every L1 cell must lose nothing; another level's count is reported
    def cell_of(x: str) -> tuple[str, str, str]:
        system, fault = x.split(":", 1)
        return (system, *(fault.split("@", 1) + ["L1"])[:2])
    faults = [cell_of(x) for x in a.faults.split(",") if x]
    interrupt = cell_of(a.interrupt) if a.interrupt else None
    # the interrupted cell, when the same cell runs last before it, is that cluster's second cycle
    reuse = bool(faults) and faults[-1] == interrupt
    shutil.rmtree(a.out, ignore_errors=True)
    failures = []
    seen = {"id": a.id, "pids": [], "tmp": tmp_entries()}
    t0 = time.monotonic()
    try:
        inv_path = lab.up(a.id, 3, 1, a.subnet, log=say, login_user=a.ec2_like, ec2_like=a.ec2_like)
        inv = load(inv_path)
        if a.ec2_like:  # its JVMs' files in /tmp are the login user's (looked up now: lab down removes the user)
            seen["uid"] = pwd.getpwnam(lab.login_user_name(a.id)).pw_uid
        d = Path(inv.provider["dir"])
        seen["pids"] += [int(Path(f).read_text().split()[0]) for f in inv.provider["sshdPidFiles"].values()]
        tp = time.monotonic()
        systems = ",".join(dict.fromkeys([s for s in a.systems.split(",") if s] + [s for s, _, _ in faults]))
        if not a.hosts_profile:
            subprocess.run([sys.executable, "-m", "testbeds", "prepare", "--inventory", str(inv_path), "--systems",
                            systems], check=True, cwd=root(), timeout=1800)
            say(f"prepared in {time.monotonic() - tp:.0f} s")
        plain = [s for s in a.systems.split(",") if s]
        if a.hosts_profile:
            found, records = hosts_profile_run(inv_path, plain, a.out)
            failures += found
            # the workflow stopped every cluster it started: the fault cells below start their own
            failures += [f"--profile hosts: a cluster outlived the workflow: {x}" for x in server_java(inv)]
        if a.ec2_like:
            failures += [f"after prepare: {x}" for x in not_handed_over(inv, seen["uid"])]
        for system in plain:
            rec = records.get(system) if a.hosts_profile else cell(system, a.out, inv_path)
            if rec is not None:
                failures += check_cell(system, rec)
        for i, (system, fault, level) in enumerate(faults):
            rec = fault_cell(system, fault, a.out, inv_path, level, keep_cluster=reuse and i == len(faults) - 1)
            f = rec.get("fault") if isinstance(rec.get("fault"), dict) else {}
            say(f"{system} {level} {fault}: {rec['status']} in {rec['seconds']} s, {f.get('lost')} lost of "
                f"{f.get('acknowledged')} acknowledged, targets {f.get('targets')}"
                + (f": {rec.get('error', '').splitlines()[0]}" if rec["status"] != "ok" else ""))
            if rec["status"] != "ok" or not f.get("acknowledged") or (level == "L1" and f.get("lost") != 0):
                failures.append(f"{system} {level} {fault}: {rec['status']} lost={f.get('lost')} "
                                f"acknowledged={f.get('acknowledged')} {rec.get('error', '')}".strip())
            # healed and resumed: no nft table and no stopped process outlives the fault run
            failures += [f"{system} {level} {fault}: left after the run: {x}" for x in fault_leftovers(inv)]
            if a.ec2_like and reuse and i == len(faults) - 1:
                # the cluster this cell kept for the interrupted cell: its nodes are the login user's processes
                n, foreign = java_not_of(inv, seen["uid"])
                failures += [f"{system} {level} {fault}: kept cluster: {x}" for x in foreign]
                if n == 0:
                    failures.append(f"{system} {level} {fault}: kept its cluster, but no java process runs on the hosts")
                else:
                    say(f"{system} {level} {fault}: its cluster kept, {n} java process(es) on the hosts, all the login "
                        "user's")
        if interrupt:
            system, fault, level = interrupt
            # rep 2: the key's cluster, if an earlier cell left it, takes this as its next cycle
            rec = fault_cell(system, fault, a.out, inv_path, level, rep=2, interrupt_when=lambda: partitioned(inv))
            say(f"{system} {level} {fault} interrupted after {rec.get('interruptedAfter')} s: {rec['status']} "
                f"({rec.get('reason')}), exit {rec.get('exitCode')}, in {rec['seconds']} s")
            if reuse and rec.get("clusterCycle") != 2:
                failures.append(f"{a.interrupt}: ran as cycle {rec.get('clusterCycle')} of its cluster; want 2, on the "
                                "cluster the same cell left just before")
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
    if a.ec2_like and (lab.SUDOERS_DIR / f"streambench-lab-{a.id}").exists():
        left.append(f"sudoers file {lab.SUDOERS_DIR / f'streambench-lab-{a.id}'}")
    failures += [f"left after lab down: {x}" for x in left]
    say(f"done in {time.monotonic() - t0:.0f} s")
    for f in failures:
        print(f"labtest: FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
