"""Provisioning and teardown against moto's server: exactly the planned resources, and nothing after teardown."""
import base64
import json
import subprocess

import jsonschema
import pytest
import yaml

from testbeds.aws import plan, provision
from testbeds.aws.plan import ROOT, AwsError

RUN = "t13"
SSH_CIDR = "203.0.113.7/32"


def config(**aws):
    from testbeds.aws.__main__ import load_config

    # vcpu_quota: moto's server has no EC2 quotas in Service Quotas (NoSuchResource), so the tests state one
    base = {"run_id": RUN, "confirm": True, "ssh_cidr": SSH_CIDR, "ami_owner": "123456789012", "max_lifetime_hours": 50,
            "vcpu_quota": 1024}
    base.update(aws)
    return load_config("aws", [f"aws.{k}={json.dumps(v)}" for k, v in base.items()])


def everything(ec2) -> dict:
    """Every resource of every type the bring-up makes, tagged or not (ids), to compare before/after."""
    return {
        "instances": {i["InstanceId"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
                      if i["State"]["Name"] != "terminated"},
        "vpcs": {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]},
        "subnets": {s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]},
        "security groups": {g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]},
        "key pairs": {k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]},
        "internet gateways": {g["InternetGatewayId"] for g in ec2.describe_internet_gateways()["InternetGateways"]},
        "route tables": {t["RouteTableId"] for t in ec2.describe_route_tables()["RouteTables"]},
    }


def tags(resource) -> dict:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def test_up_creates_exactly_the_plan_and_down_leaves_nothing(aws, tmp_path):
    """One bring-up and teardown of fleet s002 on the emulator (each a playbook run of 15-18 Ansible tasks): what the
    bring-up made, and that the teardown removes it all and marks the fleet for a rerun (test_teardown_markers.py's
    resume check, on this teardown rather than one more bring-up of its own)."""
    before = everything(aws)
    cfg = config()
    fleets = tmp_path / "fleets"
    inv_path = fleets / "s002" / "inventory.json"
    # wait=False: the emulator's addresses are fake (the wait for SSH and the user data: testbeds/tests/test_boot_wait.py)
    inv = provision.up(cfg, "s002", RUN, inv_path, tmp_path / "up.log", facts_dir=tmp_path / "probes", wait=False,
                       fleets_dir=fleets)
    fleet = plan.load_fleets(cfg["aws"]["instances_file"])[0]["s002"]
    want_tags = {"project": "streambench", "streambench:run": RUN, "streambench:fleet": "s002"}

    # the inventory: the committed schema, private addresses, public ones for SSH, data dirs by role
    jsonschema.validate(json.loads(inv_path.read_text()), json.loads((ROOT / "testbeds/inventory.schema.json").read_text()))
    assert inv["testbed"] == "aws" and inv["id"] == RUN
    servers = [h for h in inv["hosts"] if h["roles"] == ["server"]]
    clients = [h for h in inv["hosts"] if h["roles"] == ["client"]]
    assert len(servers) == 3 and len(clients) == 2
    assert all(h["address"].startswith("10.40.0.") and h["publicAddress"] and h["root"] == "/" for h in inv["hosts"])
    assert servers[0]["dataDirs"] == {"journal": "/mnt/data-1/journal", "ledger": "/mnt/data-2/ledger", "log": "/mnt/data-2/log"}
    facts = json.loads((tmp_path / "probes" / servers[0]["name"] / "aws-instance.json").read_text())
    assert facts["result"]["instanceType"] == "i3.4xlarge" and facts["result"]["ami"].startswith("ami-")

    # exactly the planned instances, types, tags, shutdown behaviour and lifetime
    made = {k: v - before[k] for k, v in everything(aws).items()}
    assert {k: len(v) for k, v in made.items()} == {
        "instances": 5, "vpcs": 1, "subnets": 1, "key pairs": 1, "internet gateways": 1,
        "security groups": 1 + 1,  # ours + the VPC's default group (removed with the VPC)
        "route tables": 1 + 1,  # the VPC's main table + the one with the default route
    }
    instances = [i for r in aws.describe_instances(InstanceIds=sorted(made["instances"]))["Reservations"] for i in r["Instances"]]
    by_name = {tags(i)["Name"]: i for i in instances}
    assert sorted(by_name) == sorted(h for h, _, _ in fleet.hosts)
    for name, role, itype in fleet.hosts:
        i = by_name[name]
        assert i["InstanceType"] == itype
        assert tags(i) == {**want_tags, "Name": name, "streambench:role": role}
        assert i["KeyName"] == f"sb-{RUN}-s002"
        attr = aws.describe_instance_attribute(InstanceId=i["InstanceId"], Attribute="instanceInitiatedShutdownBehavior")
        assert attr["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        ud = aws.describe_instance_attribute(InstanceId=i["InstanceId"], Attribute="userData")["UserData"]["Value"]
        script = base64.b64decode(ud).decode()
        assert "--on-active=3000m" in script  # max_lifetime_hours 50
        assert ("WANT=2" if role == "server" else "WANT=0") in script
    for kind, describe, key in (("vpcs", "describe_vpcs", "Vpcs"), ("subnets", "describe_subnets", "Subnets"),
                                ("internet gateways", "describe_internet_gateways", "InternetGateways"),
                                ("key pairs", "describe_key_pairs", "KeyPairs")):
        for res in getattr(aws, describe)()[key]:
            if any(res.get(f) in made[kind] for f in ("VpcId", "SubnetId", "InternetGatewayId", "KeyName")):
                assert {k: tags(res)[k] for k in want_tags} == want_tags, kind

    # security group: SSH only from the caller's /32, everything else only from the group itself
    (sg,) = [g for g in aws.describe_security_groups(GroupIds=sorted(made["security groups"]))["SecurityGroups"]
             if g["GroupName"] != "default"]
    assert {k: tags(sg)[k] for k in want_tags} == want_tags
    rules = sg["IpPermissions"]
    assert len(rules) == 2
    ssh = next(r for r in rules if r["IpProtocol"] == "tcp")
    assert (ssh["FromPort"], ssh["ToPort"], [x["CidrIp"] for x in ssh["IpRanges"]], ssh["UserIdGroupPairs"]) == (22, 22, [SSH_CIDR], [])
    allin = next(r for r in rules if r["IpProtocol"] == "-1")
    assert allin["IpRanges"] == [] and [p["GroupId"] for p in allin["UserIdGroupPairs"]] == [sg["GroupId"]]

    # teardown (the error handler's, python -m testbeds.aws down --run-id RUN) while s002 is up and prepared, its runs
    # under way: every resource type back to what was there before, and s002 marked for a rerun
    # (test_teardown_markers.check_marks); a second teardown is a no-op
    from testbeds.aws.tests import test_teardown_markers  # (it imports this module's RUN and config)

    test_teardown_markers.other_fleets(fleets, inv_path)
    removed = provision.down(cfg, RUN, tmp_path / "down.log", fleets_dir=fleets)
    assert removed["instances"] and removed["VPCs"]
    assert everything(aws) == before
    assert provision.leftovers(plan.check_credentials("us-east-1"), RUN) == {}
    test_teardown_markers.check_marks(fleets)
    log_size = (tmp_path / "down.log").stat().st_size
    assert provision.down(cfg, RUN, tmp_path / "down.log", fleets_dir=fleets) == {}
    assert (tmp_path / "down.log").stat().st_size == log_size  # nothing found, no playbook run
    assert everything(aws) == before


def test_a_failure_in_the_middle_of_provisioning_leaves_nothing(aws, tmp_path):
    before = everything(aws)
    with pytest.raises(AwsError) as exc:
        provision.up(config(), "s002", RUN, tmp_path / "inventory.json", tmp_path / "up.log", fail_after="subnet")
    assert "injected failure after the subnet" in str(exc.value) and "\n" not in str(exc.value)
    assert "VPC" in (tmp_path / "up.log").read_text()  # it did create things before failing
    assert everything(aws) == before
    assert not (tmp_path / "inventory.json").exists()


def cli(*args, env=None):
    return subprocess.run(["python", "-m", "testbeds.aws", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("sets, message", [
    ([], "aws: config aws.confirm: missing; set aws.confirm: true"),
    (["aws.region=xx-nowhere-9"], "aws: config aws.region: unknown region 'xx-nowhere-9'"),
    (["aws.prices_file=PRICES"], "prices.yaml: prices.i3.4xlarge: missing (instance type used by the fleets)"),
    (["aws.instances_file=INSTANCES"], "instances.yaml: fleets.s001.servers.type: unknown instance type 'i9.huge'"),
    (["aws.confirm=true", "NOCREDS"], "aws: AWS credentials: none found in the standard chain"),
])
def test_bad_input_is_one_line_before_anything_is_created(aws, moto_server, tmp_path, sets, message):
    import os

    from testbeds.aws.tests.conftest import aws_env

    prices = tmp_path / "prices.yaml"
    prices.write_text("region: us-east-1\ndate: '2025-06-01'\nprices: {i3en.2xlarge: 0.904, m5n.8xlarge: 1.904}\n")
    instances = tmp_path / "instances.yaml"
    instances.write_text((ROOT / "testbeds/aws/instances.yaml").read_text().replace("type: i3.4xlarge", "type: i9.huge", 1)
                         .replace("type: i3.4xlarge", "type: i9.huge", 1))
    env = dict(os.environ, **aws_env(moto_server))
    if "NOCREDS" in sets:
        env = {k: v for k, v in env.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    args = []
    for s in sets:
        if s != "NOCREDS":
            args += ["--set", s.replace("PRICES", str(prices)).replace("INSTANCES", str(instances))]
    before = everything(aws)
    r = cli(*args, "--set", "workloads.experiments=[E002-LAT]", "--set", f"aws.run_id={RUN}",
            "--set", f"aws.ssh_cidr={SSH_CIDR}", "up", "--fleet", "s002", "--inventory", str(tmp_path / "inv.json"), env=env)
    assert r.returncode == 1
    errors = [line for line in r.stderr.splitlines() if line.startswith("aws: ") and not line.startswith("aws estimate")]
    assert len(errors) == 1 and message in errors[0], r.stderr
    assert everything(aws) == before


def test_an_instance_type_not_offered_in_the_region_is_refused(aws, tmp_path):
    cfg = config(region="us-east-1")
    offered = aws.describe_instance_type_offerings(Filters=[{"Name": "instance-type", "Values": ["i3.4xlarge"]}])
    assert offered["InstanceTypeOfferings"], "the emulator offers i3.4xlarge in us-east-1"
    # a region whose offerings the emulator knows without that type
    cfg["aws"]["region"] = "ap-southeast-3"
    cfg["aws"]["prices_file"] = str(tmp_path / "prices.yaml")
    (tmp_path / "prices.yaml").write_text("region: ap-southeast-3\ndate: x\nprices: {i3.4xlarge: 1, m5n.8xlarge: 1}\n")
    cfg["workloads"]["experiments"] = ["E002-LAT"]
    with pytest.raises(AwsError, match="instance type (i3.4xlarge|m5n.8xlarge) is not offered in region ap-southeast-3"):
        provision.preflight(cfg, ["s002"])


def test_userdata_finds_the_instance_store_disks_by_model(tmp_path):
    fleet = plan.load_fleets("testbeds/aws/instances.yaml")[0]["s000"]
    script = tmp_path / "ud.sh"
    script.write_text(provision.user_data(fleet, "server", 2))
    sysfs = tmp_path / "sys"
    # nvme0 is the EBS root volume; the instance-store disks have device names in a different order than PCI
    for name, pci, model in (("nvme0n1", "0000:00:04.0", "Amazon Elastic Block Store"),
                             ("nvme1n1", "0000:00:1f.0", "Amazon EC2 NVMe Instance Storage"),
                             ("nvme2n1", "0000:00:1e.0", "Amazon EC2 NVMe Instance Storage")):
        dev = tmp_path / "devices" / pci / "nvme" / name[:-2]
        dev.mkdir(parents=True)
        (dev / "model").write_text(model + "    \n")
        (sysfs / "block" / name).mkdir(parents=True)
        (sysfs / "block" / name / "device").symlink_to(dev)
        (sysfs / "block" / name / "size").write_text("4882812500\n")
    r = subprocess.run(["bash", str(script)], env={"SB_SYSFS": str(sysfs), "SB_DRYRUN": "1", "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "+ poweroff after 120 minutes" in lines
    # study 003's 100K-consumer runs: the hard open-file limit scales.aws.fd_limit assumes
    fd_limit = yaml.safe_load((ROOT / "workloads" / "experiments.yaml").read_text())["scales"]["aws"]["fd_limit"]
    assert f"+ append to /etc/security/limits.d/90-streambench.conf: * hard nofile {fd_limit}" in lines
    assert "+ mkfs.xfs -f /dev/nvme2n1" in lines and "+ mount -o noatime /dev/nvme2n1 /mnt/data-1" in lines
    assert "+ mount -o noatime /dev/nvme1n1 /mnt/data-2" in lines
    assert not any("nvme0n1" in line for line in lines)
    assert "+ mkdir -p /mnt/data-1/journal" in lines and "+ mkdir -p /mnt/data-2/ledger" in lines
    disks = json.loads(lines[-1])
    assert [d["mount"] for d in disks] == ["/mnt/data-1", "/mnt/data-2"] and disks[0]["sizeBytes"] == 4882812500 * 512
