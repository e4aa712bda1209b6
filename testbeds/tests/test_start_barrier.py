"""The coordinated start of runner processes on several client hosts (issue 30, blocker 6; issue 29, fan-out over
client hosts): testbeds.runner.coordinate_start against a real sshd on 127.0.0.1. Each "runner" here is a shell
process that does what the runner does with --barrier DIR --barrier-coordinated: it marks itself ready in its own
host's directory after its set-up (of a different length per host) and waits for the start time in `go`."""
from __future__ import annotations

import subprocess
import time

import pytest

from testbeds import inventory, util
from testbeds.runner import coordinate_start
from testbeds.tests.localsshd import inventory_doc, needs_sshd

RUNNER_LIKE = r"""
d=$1; i=$2; setup=$3
sleep "$setup"
mkdir -p "$d"; date +%s%3N > "$d/.ready-$i.tmp"; mv "$d/.ready-$i.tmp" "$d/ready-$i"
while [ ! -f "$d/go" ]; do sleep 0.02; done
cat "$d/go"
"""


def _hosts(tmp_path, sshd):
    sshd.start()
    inv = inventory.check(inventory_doc(tmp_path, sshd), tmp_path / "inventory.json")
    # two "client hosts", each with its own barrier directory (they share no file system)
    return [(h, str(tmp_path / "hosts" / h.name / "bench" / "barrier")) for h in inv.hosts[:2]]


def _start(hosts, setups):
    return [subprocess.Popen(["bash", "-c", RUNNER_LIKE, "runner", d, str(i), str(s)], stdout=subprocess.PIPE, text=True)
            for i, ((_, d), s) in enumerate(zip(hosts, setups))]


@needs_sshd
def test_processes_start_together_however_late_one_is_ready(sshd, tmp_path):
    hosts = _hosts(tmp_path, sshd)
    procs = _start(hosts, [0.2, 4.0])  # the second host's set-up takes 4 s (a slow JVM, thousands of consumers)
    try:
        at = coordinate_start(hosts, lambda: all(p.poll() is None for p in procs), deadline_s=60, lead_ms=1500,
                              poll_s=1.0)
        outs = [p.communicate(timeout=30)[0].strip() for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert outs == [str(at), str(at)]  # one start time, in both hosts' directories
    ready = [int((tmp_path / "hosts" / h.name / "bench" / "barrier" / f"ready-{i}").read_text())
             for i, (h, _) in enumerate(hosts)]
    assert at >= max(ready) + 1500  # after the later process was ready, with the lead
    # and not long after: the lead grows only with the ssh calls' own cost (3x the slowest + 1 s), which a loaded
    # machine makes seconds, never tens of them
    assert at - max(ready) < 20_000


@needs_sshd
def test_a_process_that_ends_before_it_is_ready_fails_the_start_at_once(sshd, tmp_path):
    hosts = _hosts(tmp_path, sshd)
    procs = _start(hosts, [0.2, 600])
    procs[1].kill()  # the second host's runner dies during its set-up
    procs[1].wait()
    t0 = time.monotonic()
    try:
        with pytest.raises(util.TestbedError) as e:
            coordinate_start(hosts, lambda: all(p.poll() is None for p in procs), deadline_s=60, poll_s=1.0)
    finally:
        for p in procs:
            p.kill()
    assert time.monotonic() - t0 < 15
    assert "ended before every process was ready" in str(e.value) and hosts[1][0].name in str(e.value)
    assert not (tmp_path / "hosts" / hosts[0][0].name / "bench" / "barrier" / "go").exists()


@needs_sshd
def test_a_host_never_ready_is_named_at_the_deadline(sshd, tmp_path):
    hosts = _hosts(tmp_path, sshd)
    procs = _start(hosts, [0.2, 600])
    try:
        with pytest.raises(util.TestbedError) as e:
            coordinate_start(hosts, lambda: all(p.poll() is None for p in procs), deadline_s=3, poll_s=1.0)
    finally:
        for p in procs:
            p.kill()
    msg = str(e.value)
    assert "\n" not in msg and hosts[1][0].name in msg and hosts[0][0].name not in msg and "not ready 3 s" in msg


@needs_sshd
def test_client_clocks_are_read_over_ssh_and_a_skewed_one_is_refused_naming_both_hosts(sshd, tmp_path, monkeypatch):
    from testbeds import runner
    hosts = [h for h, _ in _hosts(tmp_path, sshd)]
    first = runner.clock_offset(hosts[0])
    assert abs(first["offsetMs"]) <= first["rttMs"] / 2 + 5 and first["rttMs"] < 1000, first  # one machine: ~0
    # the second host's clock runs 2 s ahead (far beyond any round trip of a loaded machine)
    monkeypatch.setattr(runner, "CLOCK_COMMAND", runner.CLOCK_COMMAND.replace("repr(time.time())",
                                                                              "repr(time.time() + 2.0)"))
    second = runner.clock_offset(hosts[1])
    assert 2000 - second["rttMs"] / 2 - 5 <= second["offsetMs"] <= 2000 + second["rttMs"] / 2 + 5, second
    clocks = {hosts[0].name: first, hosts[1].name: second}
    with pytest.raises(util.TestbedError) as e:
        runner.check_clocks(clocks, bound_ms=50)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"client clocks: {hosts[1].name} is 2") and f"ahead of {hosts[0].name}" in msg
    assert runner.check_clocks(clocks, bound_ms=5000)["maxSkewMs"] == pytest.approx(2000, abs=first["rttMs"] + second["rttMs"] + 10)


def test_the_reading_error_counts_for_the_clocks():
    from testbeds import runner
    # 60 ms apart but each reading uncertain by 25 ms (round trips of 50 ms): not provably above a 50-ms bound
    c = {"a": {"offsetMs": 0.0, "rttMs": 50.0}, "b": {"offsetMs": 60.0, "rttMs": 50.0}}
    assert runner.check_clocks(c, 50)["maxSkewMs"] == 60.0
    # the same spread read with 2-ms round trips is provably above the bound
    c = {"a": {"offsetMs": 0.0, "rttMs": 2.0}, "b": {"offsetMs": 60.0, "rttMs": 2.0}}
    with pytest.raises(util.TestbedError):
        runner.check_clocks(c, 50)


def test_the_lead_grows_with_slow_ssh_calls_and_every_host_gets_the_same_start():
    """Pure logic with a stand-in ssh: a host whose ssh call costs 1 s (busy connecting thousands of consumers) gets
    a start at least 3 x 1 s + 1 s ahead, not the 3-s default it would read too late; the go files are written in
    parallel, all with one time."""
    from testbeds.runner import coordinate_start
    calls = []

    class H:
        def __init__(self, name):
            self.name = name

    def slow_ssh(h, cmd, timeout=0, check=True):
        time.sleep(1.0 if "ready-" in cmd else 0.0)
        calls.append((h.name, cmd))
        return subprocess.CompletedProcess(cmd, 0, "0\n", "")  # ready at the first poll

    hosts = [(H("client-1"), "/b1"), (H("client-2"), "/b2")]
    t0 = time.time()
    at = coordinate_start(hosts, lambda: True, deadline_s=60, lead_ms=3000, ssh=slow_ssh)
    assert at >= (t0 + 2.0) * 1000 + 4000 - 50  # two slow polls, then at least 3 x 1 s + 1 s of lead
    gos = [c for _, c in calls if "/go" in c]
    assert len(gos) == 2 and all(f"printf %s {at} " in c for c in gos)
