"""The AWS rehearsal: `snakemake --profile aws-rehearsal all` on this machine, through the aws rules unchanged.

    python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all

What it stands in for, and how:
  * the AWS control plane: moto's server on 127.0.0.1 of the controller's network namespace (a free port), with
    an image named like Canonical's; AWS_ENDPOINT_URL and dummy credentials in the command's environment. up.yml
    and down.yml (Ansible's amazon.aws modules), the quota and leftovers checks talk to it as to EC2.
  * the instances: an EC2-like lab (testbeds/lab.py, `unbooted`) with as many servers and clients as every fleet of
    aws.instances_file at once. When `aws up` has made a fleet's instances in the emulator, bind() gives each
    instance a free lab host of its role and boots it (after aws.rehearsal.boot_delay_seconds: sshd with a new
    host key and the key pair's public key; then the fleet's user data, unchanged, as root: loop-device "instance
    store" disks formatted xfs at /mnt/data-N, the limits, the completion marker). The inventory then names the
    lab host's private address (`address`) and public one (`publicAddress`, the only one the controller reaches,
    tcp/22 only) and the lab's login user (not root; sudo without password, as the AMI's user); everything else
    is what provision.make_inventory wrote from the emulator's instance. `aws down` terminates the instances
    in the emulator, then release() powers their lab hosts off (processes, mounts, loop devices, files).
  * the controller: the command runs in the lab's controller namespace, which reaches the hosts' public addresses
    only (as a laptop reaches EC2), and the emulator on its own loopback.
When the command ends, however it ends, whatever is still tagged in the emulator is torn down (as the workflow's
onerror handler would), the emulator's state is checked to be back to its initial state (no instance not
terminated, no VPC, key pair, security group but the defaults), the emulator is stopped and the lab removed (its
hosts, namespaces, loop devices, login user). The exit status is the command's, or 1 when anything was left. After a
success the run's data move under data/rehearsal/<time>/; after a failure or Ctrl-C they stay, and the same command
resumes as a real aws run does after an error (rehearse()).

A fleet's hosts share the lab's one private bridge with the other fleet's (in EC2 each fleet has its own VPC); the
controller reaching only tcp/22 of the public addresses is what the rehearsal checks.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from testbeds.aws import plan
from testbeds.aws.plan import ROOT, AwsError

ENV_LAB = "STREAMBENCH_REHEARSAL_LAB"
ENV_PRESTAGE = "STREAMBENCH_REHEARSAL_PRESTAGE"  # the wrapper's first snakemake call: what needs the network
LAB_ID = "rh"
LAB_SUBNET = "10.77.200.0/24"
REGION_ENV = "AWS_DEFAULT_REGION"
# moto's default account: the image seeded here is owned by it (aws.ami_owner of the rehearsal profile)
AMI_NAME = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250101"


def enabled(aws: dict) -> bool:
    return aws.get("rehearsal") is not None


def lab_id(aws: dict) -> str:
    """The lab the rehearsal's instances run on: the one `rehearse` made (its id in the environment)."""
    lid = os.environ.get(ENV_LAB)
    if not lid:
        raise AwsError("aws.rehearsal is set but no rehearsal lab is up: run the workflow through "
                       "`python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all`")
    return lid


def _state(lid: str) -> dict:
    from testbeds import lab
    try:
        return json.loads((lab.lab_dir(lid) / "state.json").read_text())
    except (OSError, ValueError):
        raise AwsError(f"rehearsal lab {lid}: no state.json under {lab.lab_dir(lid)} (is it up?)") from None


def controller_cidr(aws: dict) -> str:
    """The controller's address as the security group's ssh_cidr (what checkip.amazonaws.com tells a laptop)."""
    return f"{_state(lab_id(aws))['controller']['address']}/32"


@contextmanager
def _bindings(lid: str):
    """The lab's bindings (lab host -> {run, fleet, host, instanceId}) under an exclusive lock: the fleets' `aws up`
    and `aws down` run side by side."""
    from testbeds import lab
    from testbeds.util import atomic_write_json
    d = lab.lab_dir(lid)
    with open(d / "bindings.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = d / "bindings.json"
        doc = json.loads(path.read_text()) if path.exists() else {}
        before = json.dumps(doc, sort_keys=True)
        yield doc
        if json.dumps(doc, sort_keys=True) != before:
            atomic_write_json(path, doc)


def bind(aws: dict, fleet: plan.Fleet, rid: str, inventory: dict, user_data_of_role: dict[str, str],
         public_key: str, log=None) -> dict:
    """Boot a free lab host for each instance of the inventory and point the inventory at it (see the module's
    docstring); returns the inventory. No free host of a role: one line naming the fleet and the role."""
    from testbeds import lab
    lid = lab_id(aws)
    st = _state(lid)
    cfg = aws["rehearsal"] or {}
    by_name = {h["name"]: h for h in st["hosts"]}
    chosen = {}
    with _bindings(lid) as doc:
        for host in inventory["hosts"]:
            role = host["roles"][0]
            free = [h["name"] for h in st["hosts"] if role in h["roles"] and h["name"] not in doc
                    and h["name"] not in chosen.values()]
            if not free:
                raise AwsError(f"rehearsal lab {lid}: no free {role} host for {host['name']} of fleet {fleet.name}"
                               f" (the lab has {sum(role in h['roles'] for h in st['hosts'])}; make it with the"
                               " instances file's fleets)")
            chosen[host["name"]] = free[0]
        for host in inventory["hosts"]:
            doc[chosen[host["name"]]] = {"run": rid, "fleet": fleet.name, "host": host["name"],
                                         "instanceId": (host.get("facts") or {}).get("instanceId")}
    for host in inventory["hosts"]:
        lh = by_name[chosen[host["name"]]]
        role = host["roles"][0]
        lab.boot(lid, lh["name"], authorized_key=public_key, user_data=user_data_of_role[role],
                 disks=fleet.disks if role == "server" else 0, disk_gb=float(cfg.get("disk_gb", 2)),
                 delay_s=float(cfg.get("boot_delay_seconds", 5)))
        host["address"] = lh["address"]
        host["publicAddress"] = lh["publicAddress"]
        if log:
            log(f"rehearsal: instance {host['name']} ({(host.get('facts') or {}).get('instanceId')}) runs on lab host "
                f"{lh['name']} ({lh['publicAddress']}); booting")
    inventory["ssh"]["user"] = st["loginUser"]["name"]
    inventory["provider"]["rehearsal"] = {"lab": lid, "hosts": dict(chosen)}
    return inventory


def release(aws: dict, rid: str, fleet: str | None = None, log=None) -> list[str]:
    """Power off the lab hosts bound to the run (and fleet), as their instances are terminated; returns them."""
    from testbeds import lab
    lid = os.environ.get(ENV_LAB)
    if not lid or not (lab.lab_dir(lid) / "state.json").exists():
        return []
    with _bindings(lid) as doc:
        mine = sorted(n for n, b in doc.items() if b["run"] == rid and (fleet is None or b["fleet"] == fleet))
        for name in mine:
            lab.power_off(lid, name, log=log or (lambda m: None))
            del doc[name]
    return mine


# ------------------------------------------------------------------------------------------- the wrapper
def _free_port() -> int:
    with socket.socket() as s:  # a port free here is free on the controller namespace's own loopback (nothing runs there)
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def emulator_env(url: str) -> dict:
    """The environment that points boto3 and Ansible's amazon.aws modules at moto's server at url (dummy credentials;
    nothing of the user's AWS configuration is read). Also the AWS testbed's tests' (testbeds/aws/tests/conftest.py)."""
    return {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            REGION_ENV: "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent"}


def seed_image(ec2) -> None:
    """An image named like Canonical's, owned by the emulator's account (up.yml finds the AMI by owner and name)."""
    seed = ec2.run_instances(ImageId="ami-1e749f67", MinCount=1, MaxCount=1, InstanceType="t3.micro")["Instances"][0]
    ec2.create_image(InstanceId=seed["InstanceId"], Name=AMI_NAME)
    ec2.terminate_instances(InstanceIds=[seed["InstanceId"]])


def emulator_leftovers(ec2) -> dict[str, list[str]]:
    """What the emulator holds beyond its initial state: instances not terminated, VPCs but the default, key pairs,
    security groups but the defaults, internet gateways attached or tagged by a run."""
    out = {
        "instances": [i["InstanceId"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
                      if i["State"]["Name"] not in ("terminated", "shutting-down")],
        "vpcs": [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")],
        "key pairs": [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]],
        "security groups": [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]
                            if g["GroupName"] != "default"],
        "internet gateways": [g["InternetGatewayId"] for g in ec2.describe_internet_gateways()["InternetGateways"]
                              if not any(a.get("VpcId") for a in g.get("Attachments", []))
                              or any(t["Key"] == "streambench:run" for t in g.get("Tags", []))],
    }
    return {k: v for k, v in out.items() if v}


def _in_ns(ns: str, code: str, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    """Python code run in namespace ns (the controller's: the emulator listens on its loopback)."""
    return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


SEED = "import boto3\nfrom testbeds.aws import rehearsal\nrehearsal.seed_image(boto3.client('ec2'))\n"
STATE = ("import boto3, json\nfrom testbeds.aws import rehearsal\n"
         "print(json.dumps(rehearsal.emulator_leftovers(boto3.client('ec2'))))\n")


def lab_size(aws: dict) -> tuple[int, int]:
    """(servers, clients) for every fleet of the instances file up at once."""
    fleets, _ = plan.load_fleets(aws["instances_file"])
    return (sum(f.servers.count for f in fleets.values()), sum(f.clients.count for f in fleets.values()))


def prestage_targets() -> list[str]:
    """What the workflow fetches from Maven Central before any host is used: every distribution (aws_prepare copies
    them all) and the runner's jar."""
    from systems.util import cache_dir, versions
    v = versions()
    return [f"{cache_dir()}/dist/{s}-{v[s]}.prepared" for s in ("kafka", "pulsar", "pravega")] + \
        ["runner/target/omb-runner.jar"]


AWS_DATA = ("data/runs/aws", "data/raw/aws", "logs/aws")
ARCHIVE = "data/rehearsal"
MARK = "data/runs/aws/rehearsal.json"  # written by the wrapper: the aws data here are a rehearsal's
SUMMARY = "data/runs/aws/benchmarks.json"  # the runs' summary (workloads.summary), when the command made it


def failed_runs() -> list[str]:
    """The runs the summary the command made records as failed, a line each naming the run, why and where
    (workloads.summary's own line; none when it made no summary: a narrower target)."""
    from workloads.summary import failure_line
    try:
        s = json.loads((ROOT / SUMMARY).read_text())
        lines = [failure_line(f) for f in s.get("failures") or []]
        # a summary that counts failures it does not list still counts
        return lines + ["failed: a run the summary does not name"] * (int(s.get("failed") or 0) - len(lines))
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def rehearse(aws: dict, command: list[str], subnet: str = LAB_SUBNET, lid: str = LAB_ID, say=print) -> int:
    """Make the lab and the emulator, run `command` as the controller, then tear down and check (module docstring).
    The rehearsal writes where a real aws run does (data/runs/aws, data/raw/aws, logs/aws), marked as its own
    (data/runs/aws/rehearsal.json); it refuses to start over a real run's data. When the command succeeded and
    nothing was left, they move under data/rehearsal/<time>/ (a real run later starts clean and never takes a
    rehearsal's result for its own). Otherwise they stay, and the same command resumes as a real aws run does after
    an error: the fleets the teardown marked are brought up anew (a new emulator, new lab hosts), the runs already
    recorded are kept."""
    from testbeds import lab
    from testbeds.util import TestbedError, atomic_write_json
    if not enabled(aws):
        raise AwsError("rehearse: the profile's config has no aws.rehearsal (use --profile aws-rehearsal)")
    there = [d for d in AWS_DATA if (ROOT / d).exists()]
    resuming = bool(there) and (ROOT / MARK).is_file()
    if there and not resuming:
        raise AwsError(f"rehearse: {there[0]} exists and is not a rehearsal's (no {MARK}): a real aws run's data;"
                       " move it away first, the rehearsal writes there")
    if resuming:
        say(f"rehearse: resuming the rehearsal recorded in {MARK} (its fleets come up anew, its recorded runs are kept)")
    else:
        atomic_write_json(ROOT / MARK, {"rehearsal": True, "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    servers, clients = lab_size(aws)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moto_holder: list[subprocess.Popen] = []  # the emulator, once started
    rc, clean = 1, False
    # Ctrl-C and TERM reach the command (this terminal's process group); here they wait for its end and the teardown
    old = {s: signal.signal(s, lambda signum, frame: None) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rc, clean = _rehearse(aws, command, subnet, lid, servers, clients, say, moto_holder)
    finally:
        moto = moto_holder[0] if moto_holder else None
        if moto is not None and moto.poll() is None:
            os.killpg(moto.pid, signal.SIGTERM)
            try:
                moto.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(moto.pid, signal.SIGKILL)
                moto.wait()
        try:
            lab.down(lid, log=say)
        except (TestbedError, OSError) as e:
            say(f"rehearse: removing lab {lid}: {e}")
            clean = False
        for sig, h in old.items():
            signal.signal(sig, h)
        failed = failed_runs()
        if rc == 0 and clean and failed:
            # the workflow goes on past a failed run and ends 0, as a real aws run does; a rehearsal with failed runs
            # is not a rehearsal that passed: its data stay, and the runs that failed are the ones to retry
            say(f"rehearse: {len(failed)} run(s) failed ({SUMMARY}); `python -m workloads.run --forget-failed"
                f" {AWS_DATA[0]}/status` and then the same command retry exactly those")
            for line in failed:
                say(f"rehearse: {line}")
            rc = 1
        if rc == 0 and clean:
            moved = []
            for d in AWS_DATA:
                if (ROOT / d).exists():
                    dest = ROOT / ARCHIVE / stamp / d
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    (ROOT / d).rename(dest)
                    moved.append(d)
            say(f"rehearse: {', '.join(moved)} moved under {ARCHIVE}/{stamp}/")
        else:
            say(f"rehearse: {', '.join(d for d in AWS_DATA if (ROOT / d).exists())} kept: the same command resumes"
                f" (or move them away to start over)")
    return rc if clean else (rc or 1)


def _rehearse(aws, command, subnet, lid, servers, clients, say, moto_holder) -> tuple[int, bool]:
    from testbeds import lab
    from testbeds.util import TestbedError
    pre = prestage_targets()
    say("rehearse: the distributions and the runner first, here (the controller's namespace has no network): "
        + " ".join(pre))
    if subprocess.call([sys.executable, "-m", "snakemake", "--profile", "aws-rehearsal", *pre],
                       env={**os.environ, ENV_PRESTAGE: "1"}, cwd=ROOT) != 0:
        raise AwsError("rehearse: building the distributions and the runner failed (see above)")
    try:
        lab.up(lid, servers, clients, subnet, login_user=True, ec2_like=True, unbooted=True, log=say)
    except TestbedError as e:
        raise AwsError(str(e)) from None
    st = _state(lid)
    ns = st["controller"]["netns"]
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = lab.lab_dir(lid) / "moto.log"
    env = {**os.environ, **emulator_env(url), ENV_LAB: lid}
    with open(log_path, "w") as fh:
        moto_holder.append(subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True))
    ready = ("import urllib.request, time\nfor _ in range(300):\n    try:\n"
             f"        urllib.request.urlopen('{url}/moto-api/', timeout=2).close(); break\n"
             "    except OSError: time.sleep(0.2)\nelse: raise SystemExit(1)\n")
    if _in_ns(ns, ready, env, timeout=90).returncode != 0 or moto_holder[0].poll() is not None:
        raise AwsError(f"rehearse: moto's server did not start; see {log_path}")
    res = _in_ns(ns, SEED, env)
    if res.returncode != 0:
        raise AwsError(f"rehearse: seeding the emulator's image failed: {res.stderr.strip()[-300:]}")
    say(f"rehearse: lab {lid} ({servers} servers + {clients} clients, unbooted), emulator {url} in {ns}; running "
        f"{' '.join(command)}")
    t0 = time.monotonic()
    # the command is in this terminal's process group: Ctrl-C reaches it (and is ignored here until it has ended)
    rc = subprocess.call(["ip", "netns", "exec", ns, *command], env=env)
    say(f"rehearse: the command ended with status {rc} after {time.monotonic() - t0:.0f} s")
    clean = True
    from testbeds.aws import provision
    if provision.RUN_ID_FILE.is_file():
        # whatever is still tagged (a crash before the workflow's own teardown): as `snakemake --profile aws teardown`
        down = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "testbeds.aws", "--profile",
                               "aws-rehearsal", "down"], env=env, cwd=ROOT, capture_output=True, text=True)
        if down.returncode != 0:
            say(f"rehearse: teardown after the command: {down.stderr.strip()}")
            clean = False
    left = _in_ns(ns, STATE, env)
    if left.returncode != 0:
        say(f"rehearse: reading the emulator's state failed: {left.stderr.strip()[-300:]}")
        clean = False
    elif json.loads(left.stdout):
        say("rehearse: the emulator is not back to its initial state: "
            + "; ".join(f"{k}: {', '.join(v)}" for k, v in json.loads(left.stdout).items()))
        clean = False
    else:
        say("rehearse: the emulator is back to its initial state (no instance, VPC, key pair or group left)")
    running = lab.booted(lid)
    if running:
        say(f"rehearse: lab hosts still running after the teardown: {', '.join(running)}")
        clean = False
    return rc, clean
