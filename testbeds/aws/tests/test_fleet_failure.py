"""A fleet's own failure stays its own (issue 30, blocker 10), and the vCPU quota is checked before anything is
created. Against moto's server: a fleet whose bring-up or prepare fails is torn down alone while another fleet's
instances stay; its later steps are skipped and its runs recorded failed without reaching for its hosts."""
import json
import os
import shlex
import signal
import subprocess
import sys

import pytest

from testbeds.aws import plan, provision
from testbeds.aws.__main__ import load_config
from testbeds.aws.plan import ROOT, AwsError
from testbeds.aws.tests.conftest import aws_env
from testbeds.aws.tests.test_provision import RUN, SSH_CIDR, config, everything


def instances_of(ec2, fleet: str) -> list[str]:
    return sorted(i["InstanceId"] for r in ec2.describe_instances(Filters=[
        {"Name": "tag:streambench:run", "Values": [RUN]}, {"Name": "tag:streambench:fleet", "Values": [fleet]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]}])["Reservations"] for i in r["Instances"])


def up_command(fleet: str, inventory, log, fail_after: str | None = None) -> str:
    """The aws_up rule's command (python -m testbeds.aws up) with the tests' config."""
    sets = {"run_id": RUN, "confirm": True, "ssh_cidr": SSH_CIDR, "ami_owner": "123456789012", "max_lifetime_hours": 50,
            "vcpu_quota": 1024}
    args = [sys.executable, "-m", "testbeds.aws"]
    for k, v in sets.items():
        args += ["--set", f"aws.{k}={json.dumps(v)}"]
    args += ["up", "--fleet", fleet, "--run-id", RUN, "--inventory", str(inventory), "--log", str(log)]
    if fail_after:
        args += ["--fail-after", fail_after]
    return shlex.join(args)


def test_a_failed_prepare_or_bring_up_tears_down_that_fleet_only_and_its_runs_are_recorded_failed(aws, tmp_path):
    """Two fleets up (s002, s003); s003's prepare fails: s003 alone is torn down. Then s003's new bring-up fails
    after its VPC and subnet: torn down again, alone; its later steps skipped; its runs recorded failed at once;
    a later bring-up starts it afresh. s002 stays up throughout. (One test: each fleet's bring-up on the emulator
    is a playbook run of 20-30 s.)"""
    before = everything(aws)
    cfg = config()
    fleets = tmp_path / "fleets"
    session = plan.check_credentials("us-east-1")
    room = plan.network_room({"region": "us-east-1"}, session, RUN)[0]
    for fleet in ("s002", "s003"):
        provision.up(cfg, fleet, RUN, fleets / fleet / "inventory.json", tmp_path / f"up-{fleet}.log", wait=False,
                     fleets_dir=fleets)
    s002 = instances_of(aws, "s002")
    assert len(s002) == 5 and len(instances_of(aws, "s003")) == 4
    # the fleets of this run that are up do not count against its room for fleets at once (they are the plan's own);
    # for another run they do
    assert plan.network_room({"region": "us-east-1"}, session, RUN)[0] == room
    assert plan.network_room({"region": "us-east-1"}, session, "another-run")[0] == room - 2

    # --- s003's prepare fails (as `python -m testbeds prepare` does: one line naming the host, in the step's log)
    log = tmp_path / "prepare-s003.log"
    out = fleets / "s003" / "prepared.json"
    cmd = f"echo 'testbeds: error: host s003-server-2: ssh: connect to host: Connection timed out' > {log}; exit 2"
    assert provision.fleet_step(cfg, "s003", RUN, "prepare", out, cmd, log, fleets_dir=fleets) == 0
    assert instances_of(aws, "s003") == [] and provision.leftovers(plan.check_credentials("us-east-1"), RUN, "s003") == {}
    assert instances_of(aws, "s002") == s002
    rec = provision.fleet_failure("s003", RUN, fleets)
    assert rec["step"] == "prepare" and rec["exitStatus"] == 2
    assert rec["error"].startswith("testbeds: error: host s003-server-2: ssh: connect to host: Connection timed out")
    assert json.loads(out.read_text())["failed"] == rec
    # the teardown marked s003 dead for a rerun, and only s003
    assert provision.aws_up_inputs("s003", fleets) == [str(fleets / "s003" / provision.TORN_DOWN)]
    assert provision.aws_up_inputs("s002", fleets) == []
    # its runs read the real inventory, with failed.json beside it
    status = record_a_run(tmp_path / "prep", fleets / "s003" / "inventory.json")
    assert status["reason"] == "testbed" and status["error"].startswith("fleet s003 failed at prepare (testbeds: error:")
    # s002's runs are not affected by s003's failure
    from testbeds import hooks

    assert hooks.testbed_failed(str(fleets / "s002" / "inventory.json")) is None

    # --- s003's new bring-up fails after it made its VPC and subnet (the injected failure of up.yml)
    inv = fleets / "s003" / "inventory.json"
    log = tmp_path / "up-s003-again.log"
    rc = provision.fleet_step(cfg, "s003", RUN, "up", inv, up_command("s003", inv, log, fail_after="subnet"), log,
                              fleets_dir=fleets)
    assert rc == 0  # the job succeeds: the workflow goes on
    assert "VPC" in log.read_text()  # it did create things before failing
    assert provision.leftovers(plan.check_credentials("us-east-1"), RUN, "s003") == {}
    assert instances_of(aws, "s002") == s002  # the other fleet is untouched
    rec = provision.fleet_failure("s003", RUN, fleets)
    assert rec["step"] == "up" and rec["exitStatus"] == 1
    assert rec["error"].startswith("aws: testbeds/aws/up.yml: failed: injected failure after the subnet")
    stub = json.loads(inv.read_text())
    assert stub["failed"] == rec and stub["provider"] == {"fleet": "s003"} and stub["hosts"] == []

    # its prepare and probes are skipped (their commands never run), each output a stub
    for step, out in (("prepare", fleets / "s003" / "prepared.json"), ("probes", tmp_path / "probes" / "s003.json")):
        marker = tmp_path / f"ran-{step}"
        assert provision.fleet_step(cfg, "s003", RUN, step, out, f"touch {marker}", None, fleets_dir=fleets) == 0
        assert not marker.exists() and json.loads(out.read_text())["failed"]["step"] == "up"

    # a run of the fleet is recorded failed at once, naming the fleet and the step; no result, no cluster
    status = record_a_run(tmp_path / "up", inv)
    assert status["status"] == "failed" and status["reason"] == "testbed" and status["phase"] == "set-up"
    assert status["error"].startswith("fleet s003 failed at up (aws: testbeds/aws/up.yml: failed: injected failure")
    assert not (tmp_path / "up" / "result.json").exists()

    # a new bring-up of the fleet starts it afresh
    assert provision.fleet_step(cfg, "s003", RUN, "up", inv, "true", None, fleets_dir=fleets) == 0
    assert provision.fleet_failure("s003", RUN, fleets) is None

    # the other fleet was never touched; the test tears it down
    assert instances_of(aws, "s002") == s002
    provision.down(cfg, RUN, tmp_path / "down.log", fleets_dir=fleets)
    assert everything(aws) == before


def record_a_run(tmp_path, inventory) -> dict:
    """One run as benchmark_run runs it on a fleet's inventory (workloads/run.py's execute, which its command line
    calls; not main, which would take this process's signals)."""
    from workloads import plan as wplan, run as wrun

    tmp_path.mkdir(parents=True, exist_ok=True)
    run = wplan.Run("kafka", "L1", "tuned", None, "1-topic-1-partition-100b-1p-1c-50k", None, 1, ("E000-LAT1",), "tuned")
    rec = wrun.execute(run, "aws", "aws", tmp_path / "result.json", tmp_path / "status.json", inventory.parent / "clusters",
                       tmp_path / "run.log", ROOT / "workloads/drivers/kafka-L1-tuned.yaml",
                       inventory=str(inventory.resolve()))
    assert json.loads((tmp_path / "status.json").read_text()) == rec
    return rec


def test_an_interrupted_step_records_nothing_and_tears_nothing_down(tmp_path):
    fleets = tmp_path / "fleets"
    out = fleets / "s001" / "prepared.json"
    rc = provision.fleet_step({"aws": {"region": "nowhere"}}, "s001", RUN, "prepare", out, "kill -TERM $$", None,
                              fleets_dir=fleets)
    assert rc == 128 + signal.SIGTERM
    assert not out.exists() and provision.fleet_failure("s001", RUN, fleets) is None


def test_a_fleet_alone_above_the_quota_is_refused_before_anything_is_created(aws, moto_server, tmp_path):
    before = everything(aws)
    env = dict(os.environ, **aws_env(moto_server))
    r = subprocess.run([sys.executable, "-m", "testbeds.aws", "--set", "aws.confirm=true", "--set", f"aws.run_id={RUN}",
                        "--set", f"aws.ssh_cidr={SSH_CIDR}",
                        "--set", "aws.vcpu_quota=150",
                        "up", "--fleet", "s000", "--inventory", str(tmp_path / "inv.json")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("aws: ")]
    assert errors == ["aws: fleet s000 alone needs 152 vCPUs (3 x i3en.2xlarge + 4 x m5n.8xlarge), more than the"
                      " account's vCPU quota of 150 (config aws.vcpu_quota); nothing is created"], r.stderr
    assert everything(aws) == before and not (tmp_path / "inv.json").exists()


def test_without_aws_vcpu_quota_the_quota_is_read_from_service_quotas_and_a_failed_read_names_the_key(aws):
    """moto's server has Service Quotas for VPC only: asked for EC2's L-1216C47A it answers NoSuchResource, which
    is one line naming aws.vcpu_quota (the tests set it; a real account answers with its quota)."""
    session = plan.check_credentials("us-east-1")
    with pytest.raises(AwsError) as e:
        plan.vcpu_quota({"region": "us-east-1", "vcpu_quota": None}, session)
    msg = str(e.value)
    assert msg.startswith("config aws.vcpu_quota: null, and Service Quotas (us-east-1) did not answer for ec2 L-1216C47A"
                          " (Running On-Demand Standard instances): ") and "NoSuchResource" in msg
    assert msg.endswith("; set aws.vcpu_quota to the account's quota in vCPUs") and "\n" not in msg
    assert plan.vcpu_quota({"vcpu_quota": 640}, session) == (640, "config aws.vcpu_quota")
    # when the workflow is planned, a quota that cannot be read is not known yet: all at once, the gate decides
    assert plan.planning_limits({"region": "us-east-1", "vcpu_quota": None}, RUN)[:2] == (None, "not known yet")
    # and `aws up` without aws.vcpu_quota stops at that line, before anything is created
    before = everything(aws)
    cfg = config(vcpu_quota=None)
    with pytest.raises(AwsError, match=r"^config aws\.vcpu_quota: null, and Service Quotas"):
        provision.preflight(cfg, ["s002"])
    assert everything(aws) == before


def test_vcpus_that_disagree_with_ec2_are_one_line(aws, tmp_path):
    instances = tmp_path / "instances.yaml"
    instances.write_text((ROOT / "testbeds/aws/instances.yaml").read_text().replace("  i3.4xlarge: 16\n", "  i3.4xlarge: 8\n"))
    cfg = config(instances_file=str(instances))
    cfg["workloads"]["experiments"] = ["E002-LAT"]
    with pytest.raises(AwsError) as e:
        provision.preflight(cfg, ["s002"])
    assert str(e.value) == f"{instances}: vcpus.i3.4xlarge: 8, but EC2 describes i3.4xlarge with 16 vCPUs"


def test_the_fleets_at_once_fit_the_regions_vpcs_and_internet_gateways(aws, tmp_path):
    """Each fleet makes its own VPC and internet gateway: AWS's default quotas (5 each, moto's too) minus those the
    region has (its default VPC) cap the fleets at once; a plan packed for more is refused in one line."""
    session = plan.check_credentials("us-east-1")
    vpcs = len(aws.describe_vpcs()["Vpcs"])  # moto: the region's default VPC, without a gateway
    igws = len(aws.describe_internet_gateways()["InternetGateways"])
    room, source = plan.network_room({"region": "us-east-1"}, session, RUN)
    assert room == min(5 - vpcs, 5 - igws) and 0 < room < 5
    assert source == (f"region us-east-1: {vpcs} VPCs of a quota of 5, {igws} internet gateways of 5, Service Quotas"
                      " vpc L-F678F1CE and L-A4707A72")
    quota, _, room2, source2 = plan.planning_limits({"region": "us-east-1", "vcpu_quota": 640}, RUN)
    assert (quota, room2, source2) == (640, room, source)

    rows = plan.plan_from_config(load_config("aws", []))[1]
    with pytest.raises(AwsError) as e:
        plan.check_room(plan.pack(rows), room, source)
    assert str(e.value) == (f"the plan brings up to 5 fleets up at once, each with its own VPC and internet gateway, but"
                            f" {source} leave room for {room}; set aws.parallel_fleets: {room} (or raise those quotas)")
    packed = plan.pack(rows, None, None, "", room, source)
    assert packed.most == room and f"the region holds {room} more fleets' VPCs" in packed.note()
    plan.check_room(packed, room, source)
    # (fleets of this run that are up, against another run's: in the failed-prepare test, where two are up)


@pytest.mark.slow
def test_the_workflow_gate_reads_the_quota_before_anything_is_created(aws, moto_server, tmp_path):
    """`snakemake --profile aws` for one fleet's bring-up, confirmed, against moto's server without aws.vcpu_quota:
    the onstart gate prints the estimate with both wall times, then stops at the quota it cannot read (one line)."""
    from testbeds.aws.tests.test_dag import SNAKEMAKE

    before = everything(aws)
    env = dict(os.environ, **aws_env(moto_server))
    r = subprocess.run([*SNAKEMAKE, "--profile", str(ROOT / "env/profiles/aws"), "data/runs/aws/fleets/s002/inventory.json",
                        "--config", "testbed=aws", f"aws={{confirm: true, run_id: {RUN}, ssh_cidr: '{SSH_CIDR}',"
                        " boot_timeout_minutes: 0.05}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    # the gate's estimate covers the planned jobs only (here s002 and the fleet it waits for: moto's region has its
    # default VPC, so four fleets fit at once), with its wall time line
    assert "wall time: 189.8 h one fleet after another (aws.parallel_fleets: 1)" not in out
    assert "  wall time: " in out and "aws estimate (on-demand list prices" in out
    errors = [ln for ln in out.splitlines() if "aws: config aws.vcpu_quota: null, and Service Quotas" in ln]
    assert errors and all("set aws.vcpu_quota to the account's quota in vCPUs" in ln for ln in errors), out[-3000:]
    assert "python -m testbeds.aws step --fleet s002 --step up" not in out  # the bring-up never started
    assert everything(aws) == before
