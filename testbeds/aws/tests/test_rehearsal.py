"""The AWS rehearsal's bookkeeping (testbeds/aws/rehearsal.py), without a lab or an emulator: which lab host each
instance gets (by role, never one taken by another fleet; none free is one line naming the instance, the fleet and
the role), what the inventory then says, which hosts a fleet's teardown powers off, and where the run's data go (a
real run's data refused, a success archived, a failure kept for the resume). Booting and powering off are
recorded by fakes here; the real ones run in testbeds/tests/test_late_boot.py and env/test's rehearsal."""
from __future__ import annotations

import json

import pytest

from testbeds import lab
from testbeds.aws import plan, rehearsal
from testbeds.aws.plan import AwsError

LID = "rt"


def _lab_state(servers: int, clients: int) -> dict:
    hosts = [{"name": n, "roles": r, "address": f"10.77.9.{11 + i}", "publicAddress": f"10.77.9.{139 + i}",
              "netns": f"sbl-{LID}-{i}"}
             for i, (n, r) in enumerate(lab.host_names(servers, clients))]
    return {"id": LID, "hosts": hosts, "controller": {"address": "10.77.9.129", "netns": f"sbl-{LID}-ctl"},
            "loginUser": {"name": lab.login_user_name(LID)}, "unbooted": True}


@pytest.fixture
def fake_lab(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(rehearsal.ENV_LAB, LID)
    d = lab.lab_dir(LID)
    d.mkdir(parents=True)
    booted, powered_off = [], []
    monkeypatch.setattr(lab, "boot", lambda lid, name, **kw: booted.append((name, kw)) or {})
    monkeypatch.setattr(lab, "power_off", lambda lid, name, base=None, log=print: powered_off.append(name) or True)

    def make(servers, clients):
        (d / "state.json").write_text(json.dumps(_lab_state(servers, clients)))
    return make, booted, powered_off


def _inventory(fleet: plan.Fleet) -> dict:
    return {"ssh": {"user": "ubuntu"}, "provider": {"fleet": fleet.name},
            "hosts": [{"name": n, "roles": [r], "address": f"10.40.0.{10 + i}", "publicAddress": f"3.0.0.{i}",
                       "facts": {"instanceId": f"i-{i:04d}"}} for i, (n, r, _t) in enumerate(fleet.hosts)]}


AWS = {"rehearsal": {"boot_delay_seconds": 1, "disk_gb": 8}}


def test_each_instance_gets_a_free_host_of_its_role_and_the_inventory_names_it(fake_lab):
    make, booted, powered_off = fake_lab
    make(6, 3)
    fleets = plan.load_fleets("testbeds/aws/rehearsal-instances.yaml")[0]
    inv0 = rehearsal.bind(AWS, fleets["s000"], "r1", _inventory(fleets["s000"]), {"server": "S", "client": "C"}, "KEY")
    inv4 = rehearsal.bind(AWS, fleets["s004"], "r1", _inventory(fleets["s004"]), {"server": "S", "client": "C"}, "KEY")
    used = [inv0["provider"]["rehearsal"]["hosts"], inv4["provider"]["rehearsal"]["hosts"]]
    assert used[0] == {"s000-server-1": "server-1", "s000-server-2": "server-2", "s000-server-3": "server-3",
                       "s000-client-1": "client-1"}
    assert sorted(used[1].values()) == ["client-2", "client-3", "server-4", "server-5", "server-6"]
    state = _lab_state(6, 3)
    pub = {h["name"]: h["publicAddress"] for h in state["hosts"]}
    for inv, hosts in zip((inv0, inv4), used):
        assert inv["ssh"]["user"] == lab.login_user_name(LID)
        for h in inv["hosts"]:
            assert h["publicAddress"] == pub[hosts[h["name"]]] and h["address"].startswith("10.77.9.")
            assert h["facts"]["instanceId"].startswith("i-")  # the emulator's instance is still what it describes
    # servers boot with the fleet's disks and the server user data, clients with none
    kw = dict(booted)
    assert kw["server-1"]["disks"] == 2 and kw["server-1"]["user_data"] == "S" and kw["server-1"]["disk_gb"] == 8
    assert kw["client-1"]["disks"] == 0 and kw["client-1"]["user_data"] == "C"
    assert all(k["authorized_key"] == "KEY" and k["delay_s"] == 1 for k in kw.values())
    # a fleet's teardown powers off its own hosts only; the run's teardown the rest
    assert rehearsal.release(AWS, "r1", "s000") == ["client-1", "server-1", "server-2", "server-3"]
    assert sorted(powered_off) == ["client-1", "server-1", "server-2", "server-3"]
    assert rehearsal.release(AWS, "r1", "s000") == []
    assert rehearsal.release(AWS, "r1") == ["client-2", "client-3", "server-4", "server-5", "server-6"]


def test_an_instance_with_no_free_host_of_its_role_is_one_line(fake_lab):
    make, booted, _ = fake_lab
    make(3, 1)
    fleet = plan.load_fleets("testbeds/aws/rehearsal-instances.yaml")[0]["s004"]  # 2 clients
    with pytest.raises(AwsError, match=r"^rehearsal lab rt: no free client host for s004-client-2 of fleet s004 "
                                       r"\(the lab has 1;"):
        rehearsal.bind(AWS, fleet, "r1", _inventory(fleet), {"server": "S", "client": "C"}, "KEY")
    assert booted == []  # nothing booted, nothing bound
    assert json.loads((lab.lab_dir(LID) / "bindings.json").read_text() if (lab.lab_dir(LID) / "bindings.json").exists()
                      else "{}") == {}


def test_outside_the_wrapper_the_rehearsal_says_how_to_run_it(monkeypatch):
    monkeypatch.delenv(rehearsal.ENV_LAB, raising=False)
    with pytest.raises(AwsError, match="python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake"):
        rehearsal.lab_id(AWS)


@pytest.fixture
def fake_run(tmp_path, monkeypatch):
    monkeypatch.setattr(rehearsal, "ROOT", tmp_path)
    monkeypatch.setattr(lab, "down", lambda lid, log=print: {})
    monkeypatch.setattr(rehearsal, "lab_size", lambda aws: (3, 1))
    outcome = {"rc": 0, "clean": True, "calls": 0}

    def fake(aws, command, subnet, lid, servers, clients, say, holder):
        outcome["calls"] += 1
        for d in rehearsal.AWS_DATA:
            (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / "data/raw/aws/result.json").write_text("{}")
        return outcome["rc"], outcome["clean"]
    monkeypatch.setattr(rehearsal, "_rehearse", fake)
    return tmp_path, outcome


def test_a_real_runs_data_are_refused_before_anything_starts(fake_run):
    root, outcome = fake_run
    (root / "data/raw/aws").mkdir(parents=True)
    with pytest.raises(AwsError, match=r"data/raw/aws exists and is not a rehearsal's \(no data/runs/aws/rehearsal.json\)"):
        rehearsal.rehearse(AWS, ["true"], say=lambda m: None)
    assert outcome["calls"] == 0


def test_a_failed_rehearsal_keeps_its_data_for_the_resume_and_a_success_archives_them(fake_run):
    root, outcome = fake_run
    outcome["rc"] = 2
    assert rehearsal.rehearse(AWS, ["x"], say=lambda m: None) == 2
    assert (root / "data/raw/aws/result.json").exists() and (root / rehearsal.MARK).exists()
    # teardown not clean: a success of the command still fails, and the data stay
    outcome.update(rc=0, clean=False)
    assert rehearsal.rehearse(AWS, ["x"], say=lambda m: None) == 1
    assert (root / "data/raw/aws/result.json").exists()
    # the command ended 0 and the teardown was clean, but its summary records failed runs (a host's sshd stopped
    # mid-run): not a pass; the data stay and the message says how to retry exactly those runs
    outcome.update(rc=0, clean=True)
    # each failed run is named with its reason, phase and first error line (CI keeps only what is printed)
    one = {"run": "kafka/L1/E000-FAULTCI/rep-1", "reason": "timeout", "phase": "fault",
           "error": ["no reader within 60 s"], "log": "logs/aws/x.log"}
    (root / rehearsal.SUMMARY).write_text(json.dumps({"runs": 14, "ok": 2, "failed": 12, "failures": [one]}))
    said = []
    assert rehearsal.rehearse(AWS, ["x"], say=said.append) == 1
    assert (root / "data/raw/aws/result.json").exists()
    assert any(m.startswith("rehearse: 12 run(s) failed") and "--forget-failed data/runs/aws/status" in m for m in said)
    named = [m for m in said if m.startswith("rehearse: failed")]
    assert named[0] == ("rehearse: failed (timeout, in fault): kafka/L1/E000-FAULTCI/rep-1: no reader within 60 s"
                        " (log logs/aws/x.log)")
    assert len(named) == 12 and named[1:] == ["rehearse: failed: a run the summary does not name"] * 11
    (root / rehearsal.SUMMARY).write_text(json.dumps({"runs": 14, "ok": 14, "failed": 0}))
    said = []
    outcome.update(rc=0, clean=True)
    assert rehearsal.rehearse(AWS, ["x"], say=said.append) == 0
    assert any("resuming" in m for m in said)
    assert not any((root / d).exists() for d in rehearsal.AWS_DATA)
    archived = list((root / rehearsal.ARCHIVE).glob("*/data/raw/aws/result.json"))
    assert len(archived) == 1 and (archived[0].parents[3] / rehearsal.MARK).exists()
