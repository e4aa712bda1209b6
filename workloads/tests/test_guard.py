"""workloads/guard.py: deadlines, disk estimates and checks, host sampling, GC pauses, run validity (pure logic and
/proc of this machine; no broker)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from workloads import guard

LIM = guard.limits_with_defaults({})


def wl(**kw):
    base = {"topics": 1, "partitionsPerTopic": 16, "messageSize": 1024, "producerRate": 4000,
            "x-streambench": {"warmupDurationSeconds": 3, "testDurationSeconds": 10}}
    base.update(kw)
    return base


def test_plan_and_deadline_grow_with_every_phase():
    fixed = guard.plan_seconds(wl())
    assert 3 + 10 < fixed < 3 + 10 + 60
    maxrate = wl(producerRate=0)
    maxrate["x-streambench"]["rateDiscovery"] = {"stepSeconds": 4, "maxSteps": 8, "retries": 1}
    assert guard.plan_seconds(maxrate) == pytest.approx(fixed + 32)
    # every retry of every step, the longest recovery after the search (10 s) and two measured phases run again
    # lower, each after a recovery (2 x (10 + 10 s)), fit in the deadline, on top of factor x plan + margin
    assert guard.deadline_seconds(maxrate, LIM) == round(2 * guard.plan_seconds(maxrate) + 120 + 32 + 10 + 40)
    maxrate["x-streambench"]["rateDiscovery"]["remeasures"] = 0
    assert guard.deadline_seconds(maxrate, LIM) == round(2 * guard.plan_seconds(maxrate) + 120 + 32 + 10)
    # a saturation phase instead of the ladder: its seconds, no step retries; the recovery and the measured phases
    # run again lower as after a ladder
    sat = wl(producerRate=0)
    sat["x-streambench"]["rateDiscovery"] = {"stepSeconds": 4, "maxSteps": 8, "retries": 1, "mode": "saturate",
                                             "saturateSeconds": 8}
    assert guard.plan_seconds(sat) == pytest.approx(fixed + 8)
    assert guard.deadline_seconds(sat, LIM) == round(2 * guard.plan_seconds(sat) + 120 + 10 + 40)
    assert guard.disk_need_bytes(sat, 1, LIM) == pytest.approx(120e6 * (13 + 8))
    backlog = wl()
    backlog["x-streambench"]["consumerBacklogSizeBytes"] = 50 * 2**20
    assert guard.plan_seconds(backlog) > fixed + 2 * 50 * 2**20 / (4000 * 1024) - 1
    assert guard.deadline_seconds(wl(), {**LIM, "deadline_factor": 1, "deadline_margin_seconds": 10}) == round(fixed + 10)


def test_disk_need_counts_replicas_discovery_and_backlog():
    w = wl()
    assert guard.disk_need_bytes(w, 3, LIM) == pytest.approx(4000 * 1024 * 13 * 3)
    m = wl(producerRate=0)
    m["x-streambench"]["rateDiscovery"] = {"stepSeconds": 4, "maxSteps": 8}
    assert guard.disk_need_bytes(m, 2, LIM) == pytest.approx(120e6 * (13 + 32) * 2)
    m["x-streambench"]["rateDiscovery"]["maxRateMBps"] = 50  # the search's ceiling bounds what it can write
    assert guard.disk_need_bytes(m, 2, LIM) == pytest.approx(50e6 * (13 + 32) * 2)
    assert guard.fixed_need_bytes("pulsar", {"journalMaxSizeMB": 256, "journalMaxBackups": 1, "logSizeLimit": 2**28}) \
        == pytest.approx(3 * (512e6 + 2**28) + 256e6)
    # Pravega's bookies are budgeted like Pulsar's (their journals), not like a Kafka cluster
    assert guard.fixed_need_bytes("pravega", {"journalMaxSizeMB": 256, "journalMaxBackups": 1, "logSizeLimit": 2**28}) \
        == pytest.approx(3 * (512e6 + 2**28) + 256e6)
    assert guard.fixed_need_bytes("kafka", {}) == pytest.approx(512e6)


def test_check_disk_refuses_with_both_numbers(tmp_path):
    info = guard.check_disk(tmp_path, 1.0, LIM, "a tiny cell")
    assert info["usableBytes"] > 1
    with pytest.raises(guard.DiskShort) as e:
        guard.check_disk(tmp_path, 1e18, LIM, "cell kafka/L1/x/rep-1")
    msg = str(e.value)
    assert "\n" not in msg
    assert "cell kafka/L1/x/rep-1 needs about 1000000000.0 GB" in msg and "GB can be used there" in msg
    assert "BookKeeper turns read-only at 95%" in msg


def test_sampler_attributes_cpu_to_the_runner_group(tmp_path):
    import subprocess
    import sys
    # a busy child in its own process group plays the runner; its own rusage is the truth to compare with
    s = guard.HostSampler(None, None, tmp_path, LIM, interval=0.25)
    p = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<2.5: pass"],
                         start_new_session=True)
    s.runner_pids = guard.group_pids({p.pid})
    s.start()
    _, _, ru = os.wait4(p.pid, 0)
    time.sleep(0.6)  # samples after the child is gone must not take its CPU back
    s.stop()
    summ = s.summary()
    assert summ is not None and summ["cores"] == os.cpu_count()
    truth = ru.ru_utime + ru.ru_stime
    measured = summ["runnerCores"] * summ["seconds"]
    assert measured == pytest.approx(truth, abs=0.35), (summ, truth)
    assert 0 <= summ["cpuUtilisationPercent"] <= 100
    assert summ["foreignCores"] >= 0
    assert s.peak_used > 0


def test_sampler_reports_a_full_disk_once(tmp_path):
    seen = []
    s = guard.HostSampler(None, None, tmp_path, {**LIM, "disk_stop_used_fraction": 0.0001}, on_disk_full=seen.append,
                          interval=0.05)
    s.start()
    time.sleep(0.5)
    s.stop()
    assert len(seen) == 1 and "the run was stopped before the brokers turn read-only" in seen[0]


GC = """\
[2026-11-23T22:35:33.935+0000][0.035s] Using G1
[2026-11-23T22:35:43.821+0000][9.921s] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 26M->6M(512M) 56.063ms
[2026-11-23T22:35:49.174+0000][15.274s] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 27M->7M(512M) 140.316ms
[2026-11-23T22:35:50.000+0000][16.100s] GC(2) Concurrent Mark Cycle 12.000ms
[2026-11-23T22:35:59.174+0000][25.274s] GC(3) Pause Remark 40M->40M(512M) 3.5ms
"""


def test_gc_pauses_in_the_window_only(tmp_path):
    f = tmp_path / "gc.log"
    f.write_text(GC)
    t = lambda s: guard._parse_ts(s)  # noqa: E731
    t0, t1 = t("2026-11-23T22:35:40.000+0000"), t("2026-11-23T22:35:55.000+0000")
    assert guard.gc_pauses({"kafka-1": [f]}, t0, t1) == {"kafka-1": 140.316}
    assert guard.gc_pauses({"kafka-1": [f]}, t("2026-11-23T22:35:56.000+0000"), t("2026-11-23T22:36:00.000+0000")) \
        == {"kafka-1": 3.5}
    nodes = tmp_path / "rd" / "nodes" / "bookie-1" / "logs"
    nodes.mkdir(parents=True)
    (nodes / "gc.log").write_text(GC)
    (nodes / "gc.log.0").write_text("")
    assert list(guard.node_gc_logs(tmp_path / "rd")) == ["bookie-1"]


def result(rate_met=True, delay_us=5000, target=4000):
    return {"x-streambench": {"producerRate": {"target": target},
                              "measuredPhase": {"rateMet": rate_met, "achievedRate": 3000 if not rate_met else 4000,
                                                "targetRate": 4000, "publishDelayP99Micros": delay_us}}}


def test_validity_names_each_reason():
    host = {"foreignCores": 0.1, "stealPercent": 0.0}
    assert guard.validity(host, result(), LIM) == {"status": "ok", "reasons": []}
    v = guard.validity({"foreignCores": 1.7, "stealPercent": 9.0}, result(False, 2_500_000), LIM)
    assert v["status"] == "suspect"
    assert any("other work: 1.7 cores" in r for r in v["reasons"])
    assert any("steal 9.0 %" in r for r in v["reasons"])
    assert any("fell behind its schedule" in r and "2500 ms" in r and "achieved 3000 of 4000" in r for r in v["reasons"])
    # a max-rate run that did not hold its settled rate is suspect too
    assert guard.validity(host, result(False, target=None), LIM)["status"] == "suspect"
    held = result(target=None)
    held["x-streambench"]["measuredPhase"].update(sustained=True, reasons=[])
    assert guard.validity(host, held, LIM)["status"] == "ok"
    unheld = result(target=None)
    unheld["x-streambench"]["measuredPhase"].update(sustained=False, reasons=["consumer backlog grew by 9000 msgs"])
    v = guard.validity(host, unheld, LIM)
    assert v["status"] == "suspect" and v["reasons"] == [
        "the measured phase did not sustain the discovered rate: consumer backlog grew by 9000 msgs"]
    # at a fixed rate, a system that cannot keep up is a result, not a suspect run
    fixed = result()
    fixed["x-streambench"]["measuredPhase"].update(sustained=False, reasons=["consumer backlog grew by 9000 msgs"])
    assert guard.validity(host, fixed, LIM)["status"] == "ok"
    assert guard.validity(None, {}, LIM)["status"] == "ok"


def test_summary_counts_kernel_time_apart_from_foreign_work():
    """Pure arithmetic over two samples 10 s apart on 2 cores: 1.6 cores busy, of which 0.6 the cluster, 0.4 the
    runner, 0.3 kernel threads and 0.1 irq/softirq: 0.2 cores are foreign."""
    hz = os.sysconf("SC_CLK_TCK")
    s = guard.HostSampler(None, None, Path("."), LIM)
    cores = os.cpu_count()
    total = 10 * hz * cores
    s.samples = [{"t": 0.0, "total": 0, "idle": 0, "steal": 0, "irq": 0, "kthreads": 0, "cluster": 0, "runner": 0, "load1": 1.0},
                 {"t": 10.0, "total": total, "idle": total - 16 * hz, "steal": 0, "irq": 1 * hz, "kthreads": 3 * hz,
                  "cluster": 6 * hz, "runner": 4 * hz, "load1": 1.0}]
    summ = s.summary()
    assert summ["kernelCores"] == pytest.approx(0.4)
    assert summ["foreignCores"] == pytest.approx(0.2)


def test_the_other_processes_that_used_the_foreign_cores_are_named_busiest_first():
    """Rows carry what each other process used since the row before; the summary names the three busiest over the
    window (from 0.01 cores), and a suspect run's reason names them."""
    hz = os.sysconf("SC_CLK_TCK")
    s = guard.HostSampler(None, None, Path("."), LIM)
    total = 10 * hz * (os.cpu_count() or 1)
    base = {"steal": 0, "irq": 0, "kthreads": 0, "cluster": 0, "runner": 0, "load1": 1.0}
    s.samples = [dict(base, t=0.0, total=0, idle=0, other={7: 999 * hz}),  # before the window: not counted
                 dict(base, t=5.0, total=total // 2, idle=total // 2 - 4 * hz, other={11: 3 * hz, 12: 1 * hz}),
                 dict(base, t=10.0, total=total, idle=total - 9 * hz, other={11: 3 * hz, 13: 2 * hz, 14: 0})]
    s.names = {11: "python -m workloads.diskpeak", 12: "snakemake", 13: "fio", 7: "old"}
    summ = s.summary()
    assert summ["foreignCores"] == pytest.approx(0.9)
    assert summ["foreignProcesses"] == [{"pid": 11, "name": "python -m workloads.diskpeak", "cores": 0.6},
                                        {"pid": 13, "name": "fio", "cores": 0.2},
                                        {"pid": 12, "name": "snakemake", "cores": 0.1}]
    v = guard.validity(summ, {}, LIM)
    assert v["status"] == "suspect" and v["reasons"][0].endswith(
        "; the busiest: python -m workloads.diskpeak (pid 11) 0.6; fio (pid 13) 0.2; snakemake (pid 12) 0.1")
    # rows from before this field (and a remote host's) name nothing
    for r in s.samples:
        r.pop("other")
    assert s.summary()["foreignProcesses"] == []


def test_a_process_is_named_by_its_program_and_module_or_main_class():
    import subprocess
    import sys
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.2)
        assert guard._proc_name(p.pid).startswith("python") and "-c" in guard._proc_name(p.pid)
    finally:
        p.kill()
        p.wait()
    assert guard._proc_name(1) and guard._proc_name(2 ** 22 + 12345) == "?"


_CLUSTER_LIKE = r"""
import os, socket, sys, threading, time
# what a cluster makes the kernel do: fsynced writes (journal, writeback) and loopback traffic
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def echo():
    c, _ = srv.accept()
    while True:
        b = c.recv(65536)
        if not b: return
        c.sendall(b)
threading.Thread(target=echo, daemon=True).start()
cl = socket.create_connection(srv.getsockname())
buf = os.urandom(1 << 20)
t = time.time()
with open(sys.argv[1], "wb") as fh:
    while time.time() - t < float(sys.argv[2]):
        fh.write(buf); fh.flush(); os.fsync(fh.fileno()); fh.seek(0)
        cl.sendall(buf[:65536]); cl.recv(65536)
        time.sleep(0.01)
"""


def _sampled_run(tmp_path, hog: bool) -> dict:
    import subprocess
    import sys
    secs = 4.0
    cluster = subprocess.Popen([sys.executable, "-c", _CLUSTER_LIKE, str(tmp_path / "data"), str(secs)],
                               start_new_session=True)
    hog_p = None
    if hog:  # a busy loop that is neither the cluster's nor the runner's: what "other work" means
        hog_p = subprocess.Popen([sys.executable, "-c", f"import time\nt=time.time()\nwhile time.time()-t<{secs}: pass"])
    s = guard.HostSampler(guard.group_pids({cluster.pid}), None, tmp_path, LIM, interval=0.25)
    s.start()
    try:
        assert cluster.wait(60) == 0
    finally:
        s.stop()
        if hog_p:
            hog_p.kill()
            hog_p.wait()
    summ = s.summary()
    return {"summary": summ, "validity": guard.validity(summ, {}, LIM), "hog": hog_p.pid if hog_p else None}


@pytest.mark.serial  # its quiet half needs a quiet machine: env/test runs it after the parallel pass, alone
def test_a_cpu_hog_beside_a_run_is_flagged_and_the_same_run_without_it_is_not(tmp_path):
    """The validity flag means interference: a run whose cluster keeps the kernel busy (fsync, loopback) is `ok`;
    the same run with a one-core busy loop beside it is `suspect`. Needs a quiet host (as in CI).

    Steal is the hypervisor's, which no test here controls (CI's machine had 6 % over one quiet half, stop 56): a quiet
    half whose steal was over the bound is sampled again, up to three times. Should all three be stolen from, the
    verdict must still be exactly that: `suspect` for steal alone, never for other work."""
    bound = LIM["suspect_steal_percent"]
    for _ in range(3):
        quiet = _sampled_run(tmp_path, hog=False)
        if quiet["summary"]["stealPercent"] <= bound:
            break
    if quiet["summary"]["stealPercent"] <= bound:
        assert quiet["validity"]["status"] == "ok", quiet
    else:
        assert quiet["validity"]["status"] == "suspect", quiet
        assert [r for r in quiet["validity"]["reasons"] if not r.startswith("CPU steal ")] == [], quiet
    assert quiet["summary"]["kernelCores"] >= 0 and quiet["summary"]["clusterCores"] > 0
    busy = _sampled_run(tmp_path, hog=True)
    assert busy["validity"]["status"] == "suspect", busy
    assert busy["summary"]["foreignCores"] >= 0.7, busy
    top = busy["summary"]["foreignProcesses"][0]  # the hog is named: what "other work" was
    assert top["pid"] == busy["hog"] and top["name"].startswith("python") and top["cores"] >= 0.7, busy
    assert any("the host ran other work" in r for r in busy["validity"]["reasons"])
