"""Bring one fleet of an AWS run up (up.yml) and tear a run down (down.yml), with the checks around them.

`up` checks everything it can before anything is created (config, files, prices, credentials, confirm, the
instance types offered in the region), runs up.yml, and turns what it made into an inventory in the format of
testbeds/inventory.schema.json. If up.yml fails, everything the run's tag carries in that fleet is torn down
before the error is raised. `down` runs down.yml (found by tag, so safe to re-run), then lists every resource
type again and fails if anything tagged with the run is left.
"""
from __future__ import annotations

import base64
import collections
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import jsonschema

from testbeds import hooks
from testbeds.aws import plan, rehearsal
from testbeds.aws.plan import ROOT, AwsError
from testbeds.remote import control_path_dir, remove_control_dirs
from testbeds.util import TestbedError

HERE = Path(__file__).resolve().parent
INVENTORY_SCHEMA = ROOT / "testbeds" / "inventory.schema.json"
TAG_RUN = "streambench:run"
TAG_FLEET = "streambench:fleet"
RUN_ID_FILE = ROOT / "data" / "runs" / "aws" / "run-id"
# per fleet: inventory.json (aws_up), prepared.json (aws_prepare), down.json (aws_down: its runs are done and it is
# down), torn-down.json (written by `down`: the hosts those files name are gone; aws_up reads it, see below)
FLEETS_DIR = ROOT / "data" / "runs" / "aws" / "fleets"
TORN_DOWN = "torn-down.json"
# failed.json: a step of the fleet (up, prepare, probes) failed and the fleet was torn down alone (fleet_step)
FAILED = hooks.FLEET_FAILED


# ------------------------------------------------------------------------------------------- run id, keys
def new_run_id() -> str:
    return f"sb{datetime.now(timezone.utc):%Y%m%d}-{secrets.token_hex(3)}"


def run_id(aws: dict, create: bool) -> str:
    """config aws.run_id, else the one kept in data/runs/aws/run-id (made and kept when `create`)."""
    if aws.get("run_id"):
        return aws["run_id"]
    if RUN_ID_FILE.is_file():
        return RUN_ID_FILE.read_text().strip()
    rid = new_run_id()
    if create:
        RUN_ID_FILE.parent.mkdir(parents=True, exist_ok=True)
        RUN_ID_FILE.write_text(rid + "\n")
    return rid


def key_dir(rid: str) -> Path:
    cache = Path(os.environ.get("STREAMBENCH_CACHE", ROOT / ".cache"))
    return cache / "aws" / rid


def ensure_key(rid: str) -> Path:
    """An ed25519 key made for this run under .cache/aws/<run>/ (never committed); returns the private key."""
    d = key_dir(rid)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = d / "id_ed25519"
    if not key.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"streambench-{rid}", "-f", str(key)],
                       check=True)
    return key


def caller_cidr(aws: dict) -> str:
    if aws.get("ssh_cidr"):
        return aws["ssh_cidr"]
    if rehearsal.enabled(aws):  # the rehearsal's controller: its address on the lab's "public" network
        return rehearsal.controller_cidr(aws)
    try:
        with urllib.request.urlopen("https://checkip.amazonaws.com", timeout=10) as r:
            ip = r.read().decode().strip()
    except OSError as exc:
        raise AwsError(f"config aws.ssh_cidr: null, and the caller's address could not be asked ({exc}); set it") from None
    if not re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", ip):
        raise AwsError(f"config aws.ssh_cidr: null, and checkip.amazonaws.com answered '{ip[:40]}'; set it")
    return f"{ip}/32"


def _note(log: Path | None, msg: str) -> None:
    """One timestamped line in a step's log."""
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as fh:
            fh.write(f"{datetime.now(timezone.utc).isoformat()} {msg}\n")


# ------------------------------------------------------------------------------------------- user data
def user_data(fleet: plan.Fleet, role: str, max_lifetime_hours: float) -> str:
    text = (HERE / "userdata.sh").read_text()
    disks = fleet.disks if role == "server" else 0
    roles = " ".join(f"{r}={n}" for r, n in sorted(fleet.disk_roles.items())) if role == "server" else ""
    return (text.replace("@MAX_LIFETIME_MINUTES@", str(int(max_lifetime_hours * 60)))
            .replace("@DISKS@", str(disks)).replace("@ROLES@", roles))


# ------------------------------------------------------------------------------------------- ansible
def _ansible(playbook: str, variables: dict, log: Path) -> None:
    """Run a playbook of this folder on localhost; a failure is one line with the failing task's message."""
    env = dict(os.environ, ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="False",
               ANSIBLE_LOCAL_TEMP=str(Path(tempfile.gettempdir()) / "streambench-ansible"))
    bindir = Path(sys.executable).parent
    exe = str(bindir / "ansible-playbook") if (bindir / "ansible-playbook").exists() else "ansible-playbook"
    log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sb-aws-") as tmp:
        vars_file = Path(tmp) / "vars.json"
        vars_file.write_text(json.dumps(variables))
        vars_file.chmod(0o600)
        with open(log, "a") as fh:
            fh.write(f"--- {datetime.now(timezone.utc).isoformat()} {playbook}\n")
            fh.flush()
            r = subprocess.run([exe, "-i", "localhost,", "-c", "local", str(HERE / playbook), "-e", f"@{vars_file}"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            fh.write(r.stdout)
    if r.returncode != 0:
        msg = "see the log"
        for line in r.stdout.splitlines():
            if "FAILED!" in line or line.startswith("ERROR!"):
                m = re.search(r'"msg": "((?:[^"\\]|\\.)*)"', line)
                msg = (m.group(1) if m else line.strip())[:300]
                break
        raise AwsError(f"testbeds/aws/{playbook}: failed: {msg} (log: {log})")


# ------------------------------------------------------------------------------------------- preflight
def preflight(config: dict, fleet_names: list[str] | None = None, require_confirm: bool = True):
    """Everything checked before anything is created; returns (by_fleet, rows, prices, session)."""
    aws = config["aws"]
    by_fleet, rows, prices = plan.plan_from_config(config)
    if fleet_names is not None:
        for name in fleet_names:
            if name not in by_fleet:
                raise AwsError(f"{aws['instances_file']}: fleets.{name}: not a fleet of the planned runs"
                               f" (planned: {', '.join(sorted(by_fleet))})")
        rows = [r for r in rows if r.fleet.name in fleet_names]
    print(plan.format_estimate(rows, prices, aws), file=sys.stderr)
    plan.check_lifetime(rows, aws)
    if require_confirm:
        plan.check_confirm(aws)
    session = plan.check_credentials(aws["region"])
    ec2 = session.client("ec2")
    wanted = sorted({t for r in rows for t in (r.fleet.servers.type, r.fleet.clients.type)})
    try:
        offered = {o["InstanceType"] for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
            Filters=[{"Name": "instance-type", "Values": wanted}]) for o in page["InstanceTypeOfferings"]}
    except Exception as exc:  # botocore's errors: no credentials accepted, endpoint unreachable
        raise AwsError(f"AWS API ({aws['region']}): {str(exc).splitlines()[0]}") from None
    for t in wanted:
        if t not in offered:
            raise AwsError(f"{aws['instances_file']}: instance type {t} is not offered in region {aws['region']}")
    # the vCPUs the quota counts: the instances file's against EC2's own, then each fleet against the quota
    try:
        described = {i["InstanceType"]: i["VCpuInfo"]["DefaultVCpus"]
                     for i in ec2.describe_instance_types(InstanceTypes=wanted)["InstanceTypes"]}
    except Exception as exc:  # noqa: BLE001 - botocore's errors, one line
        raise AwsError(f"AWS API ({aws['region']}): {str(exc).splitlines()[0]}") from None
    stated = {g.type: g.vcpus for r in rows for g in (r.fleet.servers, r.fleet.clients)}
    for t in wanted:
        if t in described and described[t] != stated[t]:
            raise AwsError(f"{aws['instances_file']}: vcpus.{t}: {stated[t]}, but EC2 describes {t} with"
                           f" {described[t]} vCPUs")
    quota, source = plan.vcpu_quota(aws, session)
    plan.pack(rows, 1, quota, source)  # a fleet alone above the quota: one line naming it, before anything is made
    return by_fleet, rows, prices, session


# ------------------------------------------------------------------------------------------- up
def up(config: dict, fleet_name: str, rid: str, inventory_out: Path, log: Path,
       facts_dir: Path | None = None, fail_after: str | None = None, wait: bool = True,
       fleets_dir: Path = FLEETS_DIR) -> dict:
    """Bring one fleet up, wait until every host is ready (unless `wait` is false: the emulator's addresses are
    fake), and write its inventory; on any failure the fleet is torn down and nothing is written."""
    aws = config["aws"]
    _, rows, _, _ = preflight(config, [fleet_name])
    fleet = rows[0].fleet
    lifetime = plan.lifetime_hours(rows[0], aws)
    cidr = caller_cidr(aws)
    key = ensure_key(rid)
    net = aws["vpc_cidr"].split("/")[0].rsplit(".", 2)[0]
    variables = {
        "run_id": rid, "fleet": fleet.name, "region": aws["region"], "vpc_cidr": aws["vpc_cidr"],
        "subnet_cidr": f"{net}.0.0/24", "ssh_cidr": cidr, "public_key": key.with_suffix(".pub").read_text().strip(),
        "ami_owner": aws["ami_owner"], "ami_name": aws["ami_name"], "placement": fleet.placement,
        "hosts": [{"name": n, "role": role, "type": t} for n, role, t in fleet.hosts],
        "out": None, "fail_after": fail_after or "",
    }
    # servers format their instance-store disks; clients only get the maximum lifetime
    for h in variables["hosts"]:
        # base64, so that Ansible does not read the script's ${#...} as a Jinja comment
        h["user_data_b64"] = base64.b64encode(user_data(fleet, h["role"], lifetime).encode()).decode()
    with tempfile.TemporaryDirectory(prefix="sb-aws-out-") as tmp:
        variables["out"] = str(Path(tmp) / "made.json")
        try:
            _ansible("up.yml", variables, log)
        except AwsError:
            _down_after_failure(config, rid, log, fleet.name, fleets_dir)
            raise
        made = json.loads(Path(variables["out"]).read_text())
    inventory = make_inventory(fleet, rid, made, key, aws)
    inventory_out = Path(inventory_out)
    # new instances, new host keys: what the fleet's known_hosts learned from instances of an earlier bring-up (one
    # torn down after an error, then brought up again) is void, and an address given back and handed out again
    # would otherwise be refused as a changed key
    Path(inventory["ssh"]["knownHosts"]).unlink(missing_ok=True)
    if rehearsal.enabled(aws):
        # the rehearsal: each instance the emulator made boots as a host of the EC2-like lab (testbeds/aws/rehearsal.py)
        try:
            inventory = rehearsal.bind(aws, fleet, rid, inventory,
                                       {r: user_data(fleet, r, lifetime) for r in ("server", "client")},
                                       key.with_suffix(".pub").read_text(), log=lambda m: _note(log, m))
        except (AwsError, TestbedError) as exc:
            _down_after_failure(config, rid, log, fleet.name, fleets_dir)
            raise AwsError(str(exc)) from None
    if wait:
        # "running" is not "ready": sshd, the login key and the user data (disks, limits) come later
        try:
            wait_ready(inventory, inventory_out, aws["boot_timeout_minutes"] * 60, log)
        except AwsError:
            _down_after_failure(config, rid, log, fleet.name, fleets_dir)
            raise
    inventory_out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = inventory_out.with_suffix(".tmp")
    tmp_out.write_text(json.dumps(inventory, indent=2) + "\n")
    tmp_out.replace(inventory_out)
    if facts_dir is not None:
        for host in inventory["hosts"]:
            d = Path(facts_dir) / host["name"]
            d.mkdir(parents=True, exist_ok=True)
            (d / "aws-instance.json").write_text(json.dumps(
                {"probe": "aws-instance", "host": host["name"], "testbed": "aws", "run": rid, "fleet": fleet.name,
                 "result": host["facts"]}, indent=2) + "\n")
    return inventory


def _down_after_failure(config: dict, rid: str, log: Path, fleet: str, fleets_dir: Path) -> None:
    """Tear down a fleet whose bring-up failed; a failing teardown is reported, the bring-up's error is what is raised."""
    try:
        down(config, rid, log, fleet=fleet, fleets_dir=fleets_dir)
    except AwsError as exc:
        print(f"aws: tearing down after the failed bring-up also failed: {exc}", file=sys.stderr)


def wait_ready(inventory: dict, path: Path, deadline_s: float, log: Path | None = None) -> dict[str, float]:
    """Wait until every host of the inventory answers on its SSH port, lets the run's key in (its host key is
    then in the fleet's known_hosts) and has finished its user data (testbeds/remote.py wait_for_hosts); one
    line naming the first host that did not, within deadline_s in all."""
    from testbeds import inventory as inv_mod, remote
    from testbeds.util import TestbedError

    try:
        inv = inv_mod.check(inventory, path)
        took = remote.wait_for_hosts(inv, deadline_s, log=lambda m: _note(log, m))
    except (TestbedError, inv_mod.InventoryError) as exc:
        raise AwsError(str(exc)) from None
    return took


def make_inventory(fleet: plan.Fleet, rid: str, made: dict, key: Path, aws: dict) -> dict:
    by_name = {}
    for inst in made["instances"]:
        tags = inst.get("tags", {})
        by_name[tags.get("Name")] = inst
    hosts = []
    for name, role, itype in fleet.hosts:
        inst = by_name.get(name)
        if inst is None:
            raise AwsError(f"testbeds/aws/up.yml: instance {name} was not found after the bring-up")
        host = {
            "name": name, "roles": [role], "address": inst["private_ip_address"], "root": "/",
            "dataDirs": ({r: f"/mnt/data-{n}/{r}" for r, n in fleet.disk_roles.items()} if role == "server"
                         else {"log": "/opt/streambench/data"}),
            "facts": {
                "instanceType": inst["instance_type"],
                "availabilityZone": inst["placement"]["availability_zone"],
                "ami": inst["image_id"], "amiName": made.get("amiName"), "instanceId": inst["instance_id"],
                "disks": [{"role": r, "mount": f"/mnt/data-{n}", "filesystem": "xfs",
                           "model": "Amazon EC2 NVMe Instance Storage"} for r, n in sorted(fleet.disk_roles.items())]
                if role == "server" else [],
            },
        }
        if inst.get("public_ip_address"):
            host["publicAddress"] = inst["public_ip_address"]
        hosts.append(host)
    inventory = {
        "schemaVersion": 1, "testbed": "aws", "id": rid, "createdAt": datetime.now(timezone.utc).isoformat(),
        "ssh": {"user": aws["ssh_user"], "port": 22, "privateKey": str(key),
                # one file per fleet: the fleets of a run come up side by side, and an address one fleet gave back
                # may come to another with a new key
                "knownHosts": str(key.parent / f"known_hosts-{fleet.name}"),
                "options": ["StrictHostKeyChecking=accept-new"]},
        "hosts": hosts,
        "network": {"region": aws["region"], "vpc": made["vpc"], "subnet": made["subnet"],
                    "securityGroup": made["securityGroup"], "internetGateway": made["internetGateway"]},
        "provider": {"region": aws["region"], "fleet": fleet.name, "study": fleet.study,
                     "tags": {"project": "streambench", TAG_RUN: rid, TAG_FLEET: fleet.name},
                     "keyName": made["keyName"], "placement": fleet.placement},
    }
    schema = json.loads(INVENTORY_SCHEMA.read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(inventory))
    if errors:
        where = ".".join(str(p) for p in errors[0].absolute_path)
        raise AwsError(f"{INVENTORY_SCHEMA.relative_to(ROOT)}: the inventory made for {fleet.name}: {where}: {errors[0].message}")
    return inventory


# ------------------------------------------------------------------------------------------- down
def uses_placement(aws: dict) -> bool:
    """Whether any fleet of the instances file has a placement group (moto's server has no placement-group API,
    so they are only looked up when a fleet can have made one)."""
    fleets, _ = plan.load_fleets(aws["instances_file"])
    return any(f.placement for f in fleets.values())


def leftovers(session, rid: str, fleet: str | None = None, placement: bool = False) -> dict[str, list[str]]:
    """Every resource of every type the bring-up makes that still carries the run's tag (by name for placement groups)."""
    ec2 = session.client("ec2")
    filters = [{"Name": f"tag:{TAG_RUN}", "Values": [rid]}]
    if fleet:
        filters.append({"Name": f"tag:{TAG_FLEET}", "Values": [fleet]})
    out: dict[str, list[str]] = {}
    out["instances"] = [i["InstanceId"] for r in ec2.describe_instances(Filters=filters + [
        {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped", "shutting-down"]}])["Reservations"]
        for i in r["Instances"]]
    out["key pairs"] = [k["KeyName"] for k in ec2.describe_key_pairs(Filters=filters)["KeyPairs"]]
    pattern = re.compile(rf"^sb-{re.escape(rid)}-{re.escape(fleet) if fleet else 's[0-9]{3}'}$")
    if placement:
        out["placement groups"] = [g["GroupName"] for g in ec2.describe_placement_groups()["PlacementGroups"]
                                   if pattern.match(g["GroupName"]) and g.get("State") != "deleted"]
    out["security groups"] = [g["GroupId"] for g in ec2.describe_security_groups(Filters=filters)["SecurityGroups"]]
    out["subnets"] = [s["SubnetId"] for s in ec2.describe_subnets(Filters=filters)["Subnets"]]
    out["route tables"] = [t["RouteTableId"] for t in ec2.describe_route_tables(Filters=filters)["RouteTables"]]
    out["internet gateways"] = [g["InternetGatewayId"] for g in ec2.describe_internet_gateways(Filters=filters)["InternetGateways"]]
    out["VPCs"] = [v["VpcId"] for v in ec2.describe_vpcs(Filters=filters)["Vpcs"]]
    return {k: v for k, v in out.items() if v}


def mark_torn_down(rid: str, fleet: str | None = None, fleets_dir: Path = FLEETS_DIR) -> list[str]:
    """Write <fleets_dir>/<fleet>/torn-down.json beside every inventory.json / prepared.json of run rid (of that
    fleet only, when given) whose fleet has no down.json yet: those files name hosts that are about to be gone.
    The aws_up rule takes the marker as an input (aws_up_inputs), so the next `snakemake` brings that fleet up
    again and prepares it anew instead of running the remaining runs against dead hosts; the runs already
    recorded are not redone (they read the fleet's files as ancient inputs). Returns the fleets marked."""
    marked = []
    if not Path(fleets_dir).is_dir():
        return marked
    for d in sorted(Path(fleets_dir).iterdir()):
        if not d.is_dir() or (fleet and d.name != fleet) or (d / "down.json").exists():
            continue
        ours = False
        for name in ("inventory.json", "prepared.json"):
            try:
                doc = json.loads((d / name).read_text())
            except (OSError, ValueError):
                continue
            ours = ours or (doc.get("id") == rid and (doc.get("provider") or {}).get("fleet", d.name) == d.name)
        if not ours:
            continue
        tmp = d / f".{TORN_DOWN}.tmp"
        tmp.write_text(json.dumps({"run": rid, "fleet": d.name,
                                   "tornDownAt": datetime.now(timezone.utc).isoformat()}) + "\n")
        tmp.replace(d / TORN_DOWN)
        marked.append(d.name)
    return marked


def aws_up_inputs(fleet: str, fleets_dir: Path | str = FLEETS_DIR) -> list[str]:
    """The extra input of rule aws_up: the fleet's torn-down.json while the fleet is not done (no down.json).
    Newer than the fleet's inventory.json, it makes Snakemake bring the fleet up again."""
    d = Path(fleets_dir) / fleet
    if (d / TORN_DOWN).exists() and not (d / "down.json").exists():
        return [str(d / TORN_DOWN)]
    return []


def down(config_or_aws: dict, rid: str, log: Path, fleet: str | None = None,
         fleets_dir: Path = FLEETS_DIR) -> dict[str, list[str]]:
    """Remove everything tagged with the run (and fleet); returns what was there before. Safe to re-run.
    First marks the fleets' inventories dead (mark_torn_down), whether or not anything is still up (a fleet
    past its lifetime has terminated itself)."""
    aws = config_or_aws.get("aws", config_or_aws)
    session = plan.check_credentials(aws["region"])
    placement = uses_placement(aws)
    mark_torn_down(rid, fleet, fleets_dir)
    if fleet is None:  # the whole run: Ansible's ssh control-socket directories of its fleets' inventories too
        remove_control_dirs("aws", rid)
    else:  # that fleet's only: the other fleets of the run may still be running their playbooks
        shutil.rmtree(control_path_dir("aws", rid, Path(fleets_dir) / fleet / "inventory.json"), ignore_errors=True)
    before = leftovers(session, rid, fleet, placement)
    if before:
        _ansible("down.yml", {"run_id": rid, "region": aws["region"], "fleet": fleet or "",
                              "placement_groups": placement}, log)
    for attempt in range(6):
        left = leftovers(session, rid, fleet, placement)
        if not left:
            if rehearsal.enabled(aws):  # the terminated instances' lab hosts power off with them
                rehearsal.release(aws, rid, fleet, log=lambda m: _note(log, m))
            return before
        time.sleep(min(5 * (attempt + 1), 20))
    raise AwsError(f"aws down {rid}: still tagged after teardown: "
                   + "; ".join(f"{k}: {', '.join(v)}" for k, v in left.items()))


# ------------------------------------------------------------------------------------------- one fleet's failure
def fleet_failure(fleet: str, rid: str, fleets_dir: Path = FLEETS_DIR) -> dict | None:
    """The failure record of the fleet in this run (failed.json), or None."""
    try:
        rec = json.loads((Path(fleets_dir) / fleet / FAILED).read_text())
    except (OSError, ValueError):
        return None
    return rec if rec.get("run") == rid and rec.get("fleet") == fleet else None


def _write_json(path: Path, doc: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def failed_stub(rec: dict) -> dict:
    """What a failed fleet's step writes as its output instead (inventory.json, prepared.json, the probes summary):
    the fleet, the run and the failure, no hosts. workloads/run.py records the fleet's runs failed from it
    (testbeds/hooks.py testbed_failed) without reaching for any host."""
    return {"testbed": "aws", "id": rec["run"], "provider": {"fleet": rec["fleet"]}, "failed": rec,
            "hosts": [], "files": []}


def _error_of(stderr_tail, log: Path | None, rc: int) -> str:
    lines = [ln.strip() for ln in stderr_tail if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith(("aws: ", "testbeds: ")):
            return ln[:300]
    if lines:
        return lines[-1][:300]
    try:
        tail = [ln.strip() for ln in Path(log).read_text(errors="replace").splitlines() if ln.strip()] if log else []
    except OSError:
        tail = []
    return (tail[-1][:300] if tail else f"exit status {rc}") + (f" (log: {log})" if log else "")


def fleet_step(config: dict, fleet: str, rid: str, step: str, output: Path, command: str, log: Path | None = None,
               fleets_dir: Path = FLEETS_DIR) -> int:
    """Run one step of a fleet (`up`, `prepare`, `probes`: the shell command that makes `output`) so that its failure
    stays the fleet's own: the fleet is torn down at once (this fleet only), failed.json records the step and the
    error, and `output` is written as a failed stub (failed_stub), so the job succeeds and the workflow goes on: the
    fleet's later steps are skipped (a step of a fleet that failed writes its stub and returns), its runs are recorded
    failed, its aws_down marks it down, and the other fleets go on. `up` starts the fleet afresh (a failed.json of an
    earlier attempt is removed). Returns the exit status: 0, or the command's when it was interrupted (nothing
    recorded: a rerun does the step again), 1 when the teardown itself failed (the error handler tears down the run)."""
    fleets_dir = Path(fleets_dir)
    failed_file = fleets_dir / fleet / FAILED
    if step == "up":
        failed_file.unlink(missing_ok=True)
    else:
        prior = fleet_failure(fleet, rid, fleets_dir)
        if prior is not None:
            _write_json(output, failed_stub(prior))
            print(f"aws: fleet {fleet} failed at {prior.get('step')} earlier; {step} skipped", file=sys.stderr)
            return 0
    interrupted: list[int] = []
    proc = subprocess.Popen(["bash", "-c", command], cwd=ROOT, stderr=subprocess.PIPE, text=True, errors="replace")

    def _forward(signum, frame):
        interrupted.append(signum)
        try:
            proc.send_signal(signum)
        except OSError:
            pass

    old = {sig: signal.signal(sig, _forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    tail: collections.deque = collections.deque(maxlen=40)
    try:
        for line in proc.stderr:
            sys.stderr.write(line)
            tail.append(line)
        rc = proc.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if rc == 0:
        return 0
    if interrupted or rc < 0 or rc in (130, 143):
        print(f"aws: fleet {fleet}: {step} interrupted; nothing recorded", file=sys.stderr)
        return rc if rc > 0 else 128 + (interrupted[0] if interrupted else -rc)
    error = _error_of(tail, log, rc)
    print(f"aws: fleet {fleet} failed at {step}: {error}; tearing down this fleet only", file=sys.stderr)
    rec = {"run": rid, "fleet": fleet, "step": step, "error": error, "exitStatus": rc,
           "failedAt": datetime.now(timezone.utc).isoformat()}
    try:
        down(config, rid, Path(log) if log else ROOT / "logs" / "aws" / rid / f"down-{fleet}.log", fleet=fleet,
             fleets_dir=fleets_dir)
    except AwsError as exc:
        print(f"aws: fleet {fleet}: the teardown after the failed {step} failed too: {exc}", file=sys.stderr)
        return 1
    _write_json(failed_file, rec)
    _write_json(output, failed_stub(rec))
    print(f"aws: fleet {fleet} is torn down; its runs are recorded failed, the other fleets go on", file=sys.stderr)
    return 0
