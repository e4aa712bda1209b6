"""The fault cycle's client as an agent on a client host (issue 30: a controller with no route to the brokers).

- As shipped (sbhost/ with ready.py, proc.py, the shim and faultclient.py; the system's python3 in isolated mode):
  the agent answers the protocol, a client library it cannot import is one line naming the host, and an agent that
  ends is one line naming the host with the end of its stderr.
- The wheel choice from uv.lock for a host's python3, and the archive that carries them (pure logic over the lock).
- On the shared Kafka L1 cluster: a whole cycle through the agent (its traffic loop, the strike event, the hook's
  news sent to it, flush, read back and the audit brought home) judges 0 lost, 0 duplicated, as in-process.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from systems import faultclient as fc
from testbeds import deploy

PY = shutil.which("python3", path="/usr/bin:/bin")


@pytest.fixture()
def shipped(tmp_path):
    return deploy.install_hostside(tmp_path / "lib")


def _agent_cmd(lib: Path) -> list[str]:
    # -I: no user site, no PYTHONPATH, the script's directory not on the path: only what a bare host has, and lib
    return ["sh", "-c", f"cd {lib} && exec {PY} -I -c 'import sys; sys.path.insert(0, \".\"); "
            "import runpy; runpy.run_module(\"sbhost.faultclient\", run_name=\"__main__\")'"]


@pytest.mark.skipif(PY is None, reason="no system python3")
def test_the_shipped_agent_needs_only_the_standard_library_until_a_client_is_made(shipped, tmp_path):
    log = tmp_path / "agent.log"
    with pytest.raises(fc.CycleFailure, match=r"^host client-1: init: ModuleNotFoundError: No module named "
                       r"'confluent_kafka'$"):
        fc.Remote(_agent_cmd(shipped), "client-1", log, "kafka", {"kafka": {"bootstrapServers": "10.0.0.1:9092"},
                                                                  "nodes": []}, {}, str(tmp_path / "c.log"), timeout=30)


def test_an_agent_that_ends_is_one_line_naming_its_host(tmp_path):
    log = tmp_path / "agent.log"
    cmd = ["sh", "-c", "echo 'ssh: connect to host 10.77.45.140 port 22: Connection refused' >&2; exit 255"]
    with pytest.raises(fc.CycleFailure) as e:
        fc.Remote(cmd, "client-2", log, "kafka", {}, {}, "x.log", timeout=30)
    assert str(e.value) == ("host client-2: the fault client ended during init (exit 255): ssh: connect to host "
                            "10.77.45.140 port 22: Connection refused")
    assert e.value.reason == "testbed"


def test_an_agent_that_hangs_is_a_timeout_naming_its_host_and_is_stopped(tmp_path):
    seen = []
    orig = fc.Remote._stop

    def stop(self):
        seen.append(self.proc)
        orig(self)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fc.Remote, "_stop", stop)
        with pytest.raises(fc.CycleFailure, match=r"^host client-1: the fault client did not answer init within 1 s$"):
            fc.Remote(["sleep", "30"], "client-1", tmp_path / "a.log", "kafka", {}, {}, "x.log", timeout=1)
    assert len(seen) == 1 and seen[0].poll() is not None


def test_an_interrupted_call_ends_the_agent_at_once(tmp_path):
    """Ctrl-C during a long call (here wait_serving on a port nothing listens on): close() does not queue a
    `close` behind it; the end of the agent's input ends the agent, which would otherwise go on sending."""
    r = fc.Remote([sys.executable, "-m", "systems.faultclient"], "here", tmp_path / "a.log", "kafka",
                  {"kafka": {"bootstrapServers": "127.0.0.1:9"}, "nodes": [{"id": 1, "name": "kafka-1"}]}, {},
                  str(tmp_path / "c.log"))
    t = threading.Thread(target=lambda: pytest.raises(fc.CycleFailure, r.wait_serving, 60), daemon=True)
    t.start()
    time.sleep(1.0)
    assert r._busy
    t0 = time.monotonic()
    r.close()
    assert time.monotonic() - t0 < 4 and r.proc.poll() == 3


def test_wheels_for_a_hosts_python_come_from_the_lock_with_the_oldest_glibc():
    wheels, missing = deploy.lock_wheels("cp311", "x86_64")
    names = {w["name"]: w["url"].rsplit("/", 1)[1] for w in wheels}
    assert set(names) == {"confluent-kafka", "pulsar-client", "certifi", "pravega"} and missing == []
    assert names["pravega"].endswith("-cp311-cp311-manylinux_2_31_x86_64.whl")  # 2_31 before 2_35
    assert names["certifi"].endswith("-py3-none-any.whl")
    assert all(len(w["sha256"]) == 64 for w in wheels)
    _, missing = deploy.lock_wheels("cp312", "x86_64")  # Ubuntu 24.04's python3: Pravega's bindings stop at 3.11
    assert missing == ["pravega"]
    _, missing = deploy.lock_wheels("cp39", "x86_64")
    assert missing == ["confluent-kafka", "pulsar-client", "pravega"]


def test_a_host_with_an_older_glibc_gets_an_older_wheel_or_none():
    wheels, _ = deploy.lock_wheels("cp311", "x86_64", glibc=(2, 31))
    assert {w["name"]: w["url"].rsplit("/", 1)[1] for w in wheels}["pravega"].endswith("manylinux_2_31_x86_64.whl")
    _, missing = deploy.lock_wheels("cp311", "x86_64", glibc=(2, 27))  # every binary wheel needs 2.28 or later
    assert missing == ["confluent-kafka", "pulsar-client", "pravega"]


@pytest.mark.skipif(PY is None or shutil.which("unshare") is None, reason="no system python3 or unshare")
def test_a_host_like_this_machine_gets_its_libraries_without_the_network(tmp_path):
    """The lab's controller namespace has no route to the package index (env/test's first fresh clone failed there
    on the download): for a host with this interpreter's tag, machine and a glibc the installed wheels fit, the
    archive is built from this environment, with no network at all (a network namespace of its own), and the host's
    python3 imports every client library from it."""
    py, machine = deploy._this_python()
    code = ("import json, sys; from testbeds import deploy; "
            f"print(json.dumps(deploy.py_archive({py!r}, {machine!r}, deploy.CLIENT_PACKAGES, (9, 99))))")
    r = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=deploy.root(), env={**os.environ, "STREAMBENCH_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert got["missing"] == []
    out = tmp_path / "py"
    out.mkdir()
    subprocess.run(["tar", "-xf", got["tar"], "-C", str(out)], check=True)
    assert (out / got["marker"]).is_file()
    imp = subprocess.run([PY, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                          "import confluent_kafka, pulsar, certifi, pravega_client", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert imp.returncode == 0, imp.stderr[-2000:]


def test_a_server_host_gets_the_fuse_binding_only():
    wheels, missing = deploy.lock_wheels("cp312", "x86_64", packages=deploy.SERVER_PACKAGES)
    assert [w["name"] for w in wheels] == ["mfusepy"] and missing == []
    assert wheels[0]["url"].endswith("-py3-none-any.whl")


@pytest.mark.parametrize("fname, ok", [
    ("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", True),
    ("x-1.0-cp311-cp311-manylinux_2_28_aarch64.whl", False),
    ("x-1.0-cp311-cp311-musllinux_1_2_x86_64.whl", False),
    ("x-1.0-cp311-cp311-macosx_11_0_arm64.whl", False),
    ("x-1.0-cp310-cp310-manylinux_2_28_x86_64.whl", False),
    ("x-1.0-cp38-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", False),  # cp38 tag, not cp311's
    ("x-1.0-cp311-abi3-manylinux2014_x86_64.whl", True),
    ("x-1.0-py3-none-any.whl", True),
])
def test_a_wheel_fits_a_host_by_its_tags(fname, ok):
    assert (deploy._fits(fname, "cp311", "x86_64") is not None) == ok
    # and by its glibc: a manylinux_2_28 wheel does not load on a host with glibc 2.27
    if ok and "manylinux_2_28" in fname:
        assert deploy._fits(fname, "cp311", "x86_64", (2, 27)) is None


def test_rules_follow_the_hooks_news():
    a = fc.Audit(10, keys=2)
    for i in range(4):
        a.sent[i] = 100.0 + i
    a.count = 4
    news = [False, None]
    recovered, settled = fc.rules(a, lambda: tuple(news))
    assert not recovered() and settled()  # nothing back yet: keep sending; nothing to settle
    news[1] = 101.5  # back at 101.5: sends 2 and 3 came after it, none acknowledged yet
    assert not recovered() and not settled()
    a.state[3] = fc.Audit.OK
    assert recovered()
    a.last_good[:] = [102.0, 103.0]
    assert settled()
    news[:] = [True, None]  # the hook failed: nothing to wait for
    assert recovered()


def test_an_audit_travels_whole():
    a = fc.Audit(50, keys=4)
    now = time.time()
    for i in range(30):
        a.sent[i] = now + i / 1000
        a.count = i + 1
        a.ack(i, i % 7 != 0)
    b = fc.Audit(50, keys=4)
    fc._audit_fill(b, fc._audit_doc(a))
    assert (b.count, bytes(b.state), b.last_good) == (a.count, bytes(a.state), a.last_good)
    assert b.sent[:30] == [round(x, 6) for x in a.sent[:30]] and b.done[:30] == [round(x, 6) for x in a.done[:30]]
    with pytest.raises(fc.CycleFailure, match="does not fit"):
        fc._audit_fill(fc.Audit(10, keys=4), fc._audit_doc(a))


@pytest.mark.integration
@pytest.mark.cluster("kafka", "L1")
def test_a_whole_cycle_through_the_agent_reads_back_every_acknowledged_send(shared_cluster, tmp_path):
    from workloads.faultrun import verdict

    doc = shared_cluster.doc
    log = tmp_path / "agent.log"
    r = fc.Remote([sys.executable, "-m", "systems.faultclient"], "here", log, "kafka", doc,
                  {"replicationFactor": 3, "topicConfig": "min.insync.replicas=2"}, str(tmp_path / "client.log"))
    try:
        assert r.KEYS == fc.N_KEYS
        r.wait_serving(60)
        topic = f"agent-{int(time.time())}"
        r.create_topic(topic, 4)
        assert r.leader(topic) in {n["name"] for n in doc["nodes"]}
        struck = threading.Event()
        news = {"back": None}

        def strike():  # the agent's strike event: here the nodes are "back" at once
            struck.set()
            news["back"] = time.time()
        audit = fc.Audit(int(500 * 6), r.KEYS)
        t0 = r.run_traffic(topic, 500, 2.0, 256, audit, 1.0, strike, lambda: (False, news["back"]))
        assert struck.is_set() and t0 > 0
        assert audit.count == 0  # the audit lives on the host until the read back
        assert r.flush(30) == 0
        read = r.read_back(topic, 4, time.monotonic() + 60, audit)
        assert audit.count >= 1000 and len(read) == audit.count  # 2 s at 500 msg/s, and on until recovered
        v = verdict(audit, read, news["back"], news["back"])
        assert (v["acknowledged"], v["lost"], v["duplicated"], v["reordered"]) == (audit.count, 0, 0, 0)
        r.delete_topic(topic)
    finally:
        r.close()
    assert r.proc.poll() == 0
