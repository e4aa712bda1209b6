"""What an AWS run would create and what it would cost, checked before anything is created.

The fleets come from testbeds/aws/instances.yaml (one per study, with sources in ../shared/studies.md),
the prices from testbeds/aws/prices.yaml (region, date, USD per instance-hour). A fleet runs the runs of
its study's experiments; its time is an estimate from the workload files (warm-up + test minutes, the time
to build a backlog at the producer rate, a max-rate search) plus the overheads the instances file states.

Every problem is one line that names the file or config key (`AwsError`).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OMB_DIR = ROOT / "workloads" / "omb"
DISK_ROLES = ("journal", "ledger", "log")


class AwsError(ValueError):
    """A problem with the AWS testbed's input; the message is one line naming the file or the key."""


def _rel(path) -> str:
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def _load_yaml(path) -> dict:
    try:
        doc = yaml.safe_load(Path(ROOT / path).read_text())
    except FileNotFoundError:
        raise AwsError(f"{_rel(ROOT / path)}: file not found") from None
    except yaml.YAMLError as exc:
        raise AwsError(f"{_rel(ROOT / path)}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise AwsError(f"{_rel(ROOT / path)}: not a mapping")
    return doc


@lru_cache(maxsize=1)
def known_instance_types() -> frozenset[str]:
    """Every instance type the EC2 API model of the pinned botocore knows (offline)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("ec2")
    return frozenset(model.shape_for("InstanceType").enum)


def known_regions() -> list[str]:
    """The EC2 regions of the pinned botocore's endpoint data (offline)."""
    import boto3

    return boto3.session.Session().get_available_regions("ec2")


@dataclass(frozen=True)
class Group:
    type: str
    count: int
    vcpus: int = 0  # of one instance (the instances file's `vcpus` table)


@dataclass(frozen=True)
class Fleet:
    name: str  # s000 ...
    study: str
    servers: Group
    clients: Group
    disks: int  # instance-store disks used per server
    disk_roles: dict  # role -> 1-based disk index
    placement: str | None

    @property
    def vcpus(self) -> int:
        """What the fleet counts against the account's On-Demand Standard vCPU quota while it is up."""
        return self.servers.count * self.servers.vcpus + self.clients.count * self.clients.vcpus

    @property
    def shape(self) -> str:
        return (f"{self.servers.count} x {self.servers.type} + {self.clients.count} x {self.clients.type}")

    @property
    def hosts(self) -> list[tuple[str, str, str]]:
        """(host name, role, instance type) of every instance, servers first."""
        return [(f"{self.name}-server-{i}", "server", self.servers.type) for i in range(1, self.servers.count + 1)] + [
            (f"{self.name}-client-{i}", "client", self.clients.type) for i in range(1, self.clients.count + 1)
        ]


# The account quota the fleets count against: Service Quotas, EC2, "Running On-Demand Standard (A, C, D, H, I, M,
# R, T, Z) instances", in vCPUs. Every type of the fleets must belong to these families (checked by load_fleets).
STANDARD_QUOTA_CODE = "L-1216C47A"
STANDARD_FAMILIES = frozenset("acdhimrtz")


def load_fleets(path) -> tuple[dict[str, Fleet], dict]:
    """The fleets of the instances file and its `estimate` overheads; every field checked."""
    doc = _load_yaml(path)
    where = _rel(ROOT / path)
    fleets: dict[str, Fleet] = {}
    types = known_instance_types()
    vcpus = doc.get("vcpus")
    if not isinstance(vcpus, dict):
        raise AwsError(f"{where}: vcpus: missing (the vCPUs of each instance type, for the account's vCPU quota)")
    for name, f in (doc.get("fleets") or {}).items():
        at = f"{where}: fleets.{name}"
        try:
            servers, clients = f["servers"], f["clients"]
            fleet = Fleet(
                name=name,
                study=str(f["study"]),
                servers=Group(servers["type"], int(servers["count"])),
                clients=Group(clients["type"], int(clients["count"])),
                disks=int(servers["disks"]),
                disk_roles=dict(f["disk_roles"]),
                placement=f.get("placement"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AwsError(f"{at}: missing or malformed field {exc}") from None
        for group, g in (("servers", fleet.servers), ("clients", fleet.clients)):
            if g.type not in types:
                raise AwsError(f"{at}.{group}.type: unknown instance type '{g.type}'")
            if g.type[:1] not in STANDARD_FAMILIES:
                raise AwsError(f"{at}.{group}.type: {g.type} is not an On-Demand Standard instance (A, C, D, H, I, M,"
                               f" R, T, Z), the only vCPU quota ({STANDARD_QUOTA_CODE}) the plan checks")
        fleet = replace(fleet, servers=replace(fleet.servers, vcpus=_vcpus_of(vcpus, fleet.servers.type, where)),
                        clients=replace(fleet.clients, vcpus=_vcpus_of(vcpus, fleet.clients.type, where)))
        if fleet.servers.count < 3 or fleet.clients.count < 1:
            raise AwsError(f"{at}: needs at least 3 servers and 1 client")
        if set(fleet.disk_roles) != set(DISK_ROLES) or not all(
            isinstance(v, int) and 1 <= v <= fleet.disks for v in fleet.disk_roles.values()
        ):
            raise AwsError(f"{at}.disk_roles: must map {', '.join(DISK_ROLES)} to disks 1..{fleet.disks}")
        if fleet.placement not in (None, "cluster", "spread", "partition"):
            raise AwsError(f"{at}.placement: '{fleet.placement}' is not cluster, spread, partition or null")
        fleets[name] = fleet
    if not fleets:
        raise AwsError(f"{where}: fleets: none defined")
    est = doc.get("estimate") or {}
    for key in ("provision_minutes", "probes_minutes", "cluster_start_minutes", "run_overhead_seconds", "discovery_seconds"):
        if not isinstance(est.get(key), (int, float)) or est[key] < 0:
            raise AwsError(f"{where}: estimate.{key}: missing or not a non-negative number")
    return fleets, est


def _vcpus_of(table: dict, itype: str, where: str) -> int:
    value = table.get(itype)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise AwsError(f"{where}: vcpus.{itype}: missing or not a positive whole number (instance type used by the fleets)")
    return value


def load_prices(path, region: str) -> dict:
    doc = _load_yaml(path)
    where = _rel(ROOT / path)
    for key in ("region", "date", "prices"):
        if key not in doc:
            raise AwsError(f"{where}: {key}: missing")
    if doc["region"] != region:
        raise AwsError(f"{where}: region: the prices are for {doc['region']}, the config's aws.region is {region}")
    return doc


def price_of(prices: dict, path, itype: str) -> float:
    value = (prices.get("prices") or {}).get(itype)
    if not isinstance(value, (int, float)) or value <= 0:
        raise AwsError(f"{_rel(ROOT / path)}: prices.{itype}: missing (instance type used by the fleets)")
    return float(value)


# ------------------------------------------------------------------------------------------- the estimate
@lru_cache(maxsize=None)
def _workload(name: str) -> dict:
    return yaml.safe_load((OMB_DIR / f"{name}.yaml").read_text())


def run_seconds(run, est: dict) -> float:
    """Estimated wall time of one run at the studies' sizes (the aws scale leaves workloads unchanged)."""
    w = _workload(run.base_workload)
    seconds = 60 * (w.get("warmupDurationMinutes", 1) + w.get("testDurationMinutes", 5)) + est["run_overhead_seconds"]
    rate = run.rate or w.get("producerRate", 0)
    if not rate:
        seconds += est["discovery_seconds"]
    backlog_gb = w.get("consumerBacklogSizeGB", 0) or 0
    if backlog_gb and rate:
        seconds += backlog_gb * 1024**3 / (rate * w.get("messageSize", 1024))  # producing the backlog
    fan = (w.get("x-streambench") or {}).get("fanOut")
    if isinstance(fan, dict):  # study 003: connecting the consumers, up to its deadline (the study's 100K never finished)
        seconds += fan.get("connectDeadlineSeconds", 600)
    return seconds


def study_of_run(run, experiments_doc: dict) -> str:
    studies = {str(experiments_doc["experiments"][e]["study"]) for e in run.experiments}
    if len(studies) != 1:
        raise AwsError(f"workloads/experiments.yaml: run {run.key} belongs to experiments of studies "
                       f"{', '.join(sorted(studies))}; a run must belong to one study's fleet")
    return studies.pop()


@dataclass
class FleetEstimate:
    fleet: Fleet
    runs: int
    clusters: int
    hours: float
    instance_hours: float
    cost: float


def assign(runs, experiments_doc: dict, fleets: dict[str, Fleet], instances_path) -> dict[str, list]:
    """fleet name -> its runs; a study without a fleet is an error naming the instances file."""
    by_study = {f.study: f.name for f in fleets.values()}
    out: dict[str, list] = {}
    for run in runs:
        study = study_of_run(run, experiments_doc)
        if study not in by_study:
            raise AwsError(f"{_rel(ROOT / instances_path)}: fleets: no fleet for study {study} (run {run.key})")
        out.setdefault(by_study[study], []).append(run)
    return out


def estimate(runs_by_fleet: dict[str, list], fleets: dict[str, Fleet], est: dict, prices: dict, prices_path) -> list[FleetEstimate]:
    rows = []
    for name in sorted(runs_by_fleet):
        fleet, runs = fleets[name], runs_by_fleet[name]
        clusters = len({r.cluster_key for r in runs})
        seconds = sum(run_seconds(r, est) for r in runs)
        seconds += 60 * (est["provision_minutes"] + est["probes_minutes"] + clusters * est["cluster_start_minutes"])
        hours = seconds / 3600
        n = fleet.servers.count + fleet.clients.count
        cost = hours * (fleet.servers.count * price_of(prices, prices_path, fleet.servers.type)
                        + fleet.clients.count * price_of(prices, prices_path, fleet.clients.type))
        rows.append(FleetEstimate(fleet, len(runs), clusters, hours, hours * n, cost))
    return rows


# ------------------------------------------------------------------------------------------- fleets at once
@dataclass(frozen=True)
class Packing:
    """Which fleets run at the same time, and what each waits for. Made by `pack` from the fleets' estimates: a
    simulated start of every fleet as soon as it fits, after which a fleet waits for the teardown of every fleet
    that ended before it started there (`after`). Whatever the real durations, fleets can then be up together only
    if they were all up together at some moment of the simulation (neither waits for the other means their
    simulated intervals overlap, and intervals that overlap pairwise share a point), so the fleets up at once never
    exceed the quotas or aws.parallel_fleets."""
    after: dict  # fleet -> tuple of fleets whose teardown its bring-up waits for (none implied by another's)
    start: dict  # fleet -> estimated start, hours from the first bring-up
    end: dict  # fleet -> estimated end
    hours: float  # estimated wall time as packed
    sequential_hours: float  # every fleet one after another (aws.parallel_fleets: 1)
    vcpus: int  # the most vCPUs up at once as packed
    most: int  # the most fleets up at once as packed
    total_vcpus: int  # every fleet at once
    quota: int | None  # the account's vCPU quota the packing respects (None: not known, not limited)
    quota_source: str
    parallel: int | None  # aws.parallel_fleets
    room: int | None = None  # how many fleets' VPCs the region holds besides its own (None: not known)
    room_source: str = ""

    @property
    def fleets(self) -> int:
        return len(self.start)

    def describe(self) -> str:
        """e.g. `s000, s001 at once; s003 after s000; s004 after s001, s003`."""
        first = [f for f in sorted(self.start, key=lambda f: (self.start[f], f)) if not self.after[f]]
        parts = [", ".join(first) + (" at once" if len(first) > 1 else " first")]
        parts += [f"{f} after {', '.join(self.after[f])}"
                  for f in sorted(self.start, key=lambda f: (self.start[f], f)) if self.after[f]]
        return "; ".join(parts)

    def note(self) -> str | None:
        """Why fewer fleets run at once than there are (None when all run at once)."""
        n = self.fleets
        if self.most == n:
            return None
        why = []
        if self.parallel is not None and self.parallel < n:
            why.append(f"config aws.parallel_fleets is {self.parallel}")
        if self.quota is not None and self.total_vcpus > self.quota:
            why.append(f"the {n} fleets' {self.total_vcpus} vCPUs exceed the vCPU quota of {self.quota} ({self.quota_source})")
        if self.room is not None and self.room < n:
            why.append(f"the region holds {self.room} more fleets' VPCs and internet gateways ({self.room_source})")
        at_once = "one fleet at a time" if self.most == 1 else f"at most {self.most} fleets at once"
        longest = max(self.end[f] - self.start[f] for f in self.start)
        return (f"{' and '.join(why)}: {at_once} ({self.describe()}), up to {self.vcpus} vCPUs, {self.hours:.1f} h"
                f" wall time (all at once: {longest:.1f} h)")


def pack(rows: list[FleetEstimate], parallel: int | None = None, quota: int | None = None,
         quota_source: str = "config aws.vcpu_quota", room: int | None = None, room_source: str = "") -> Packing:
    """When each fleet runs. At most `parallel` fleets (None: every fleet, i.e. all at once) whose vCPUs together fit
    the quota (None: not known, not limited) are up at a time: the fleets are started longest first, each as soon
    as it fits (a shorter one that fits goes ahead of a longer one that does not), in the estimated hours. With
    `parallel` 1 they run in name order, s000 first, as they always did. A fleet that alone exceeds the quota is
    one line naming it, its vCPUs and the quota. `room` (network_room) caps the fleets at once like `parallel`."""
    by_name = {r.fleet.name: r for r in rows}
    hours = {n: r.hours for n, r in by_name.items()}
    width = {n: r.fleet.vcpus for n, r in by_name.items()}
    if quota is not None:
        for name in sorted(by_name):
            if width[name] > quota:
                f = by_name[name].fleet
                raise AwsError(f"fleet {name} alone needs {width[name]} vCPUs ({f.shape}), more than the account's vCPU"
                               f" quota of {quota} ({quota_source}); nothing is created")
    n = len(by_name)
    limit = n if parallel is None else max(1, min(int(parallel), n))
    if room is not None:
        if room < 1 and n:
            raise AwsError(f"no room for one more fleet's VPC and internet gateway: {room_source}; nothing is created")
        limit = min(limit, room)
    if limit == 1:
        pending = sorted(by_name)
    else:
        pending = sorted(by_name, key=lambda f: (-hours[f], f))
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    running: list[str] = []
    t = 0.0
    most_vcpus = most = 0
    while pending:
        free = None if quota is None else quota - sum(width[f] for f in running)
        started = False
        for f in list(pending):
            if len(running) >= limit:
                break
            if free is not None and width[f] > free:
                if limit == 1:
                    break  # cannot happen (checked above); keeps the name order
                continue
            start[f], end[f] = t, t + hours[f]
            running.append(f)
            pending.remove(f)
            free = None if free is None else free - width[f]
            started = True
            if limit == 1:
                break
        most_vcpus = max(most_vcpus, sum(width[f] for f in running))
        most = max(most, len(running))
        if not pending:
            break
        if not running and not started:  # cannot happen: every fleet fits the quota alone
            raise AwsError("no fleet fits the vCPU quota")
        t = min(end[f] for f in running)
        running = [f for f in running if end[f] > t + 1e-9]
    ended_before = {f: {g for g in start if end[g] <= start[f] + 1e-9 and g != f} for f in start}
    after = {f: tuple(sorted(g for g in before if not any(g in ended_before[h] for h in before)))
             for f, before in ended_before.items()}
    return Packing(after=after, start=start, end=end, hours=max(end.values(), default=0.0),
                   sequential_hours=sum(hours.values()), vcpus=most_vcpus, most=most,
                   total_vcpus=sum(width.values()), quota=quota, quota_source=quota_source, parallel=parallel,
                   room=room, room_source=room_source)


def vcpu_quota(aws: dict, session=None) -> tuple[int | None, str]:
    """The account's On-Demand Standard vCPU quota and where it came from: config aws.vcpu_quota when set, else
    Service Quotas (ec2, L-1216C47A) through the session; (None, ...) without either. A failed read is one line
    naming the key to set instead (moto's server answers NoSuchResource for EC2 quotas, so the tests set it)."""
    if aws.get("vcpu_quota") is not None:
        return int(aws["vcpu_quota"]), "config aws.vcpu_quota"
    if session is None:
        return None, "not known yet"
    try:
        client = session.client("service-quotas", config=_client_config())
        value = client.get_service_quota(ServiceCode="ec2", QuotaCode=STANDARD_QUOTA_CODE)["Quota"]["Value"]
    except Exception as exc:  # botocore's errors: access denied, no such quota, endpoint unreachable
        raise AwsError(f"config aws.vcpu_quota: null, and Service Quotas ({aws.get('region')}) did not answer for ec2"
                       f" {STANDARD_QUOTA_CODE} (Running On-Demand Standard instances): {str(exc).splitlines()[0]};"
                       " set aws.vcpu_quota to the account's quota in vCPUs") from None
    return int(value), f"Service Quotas ec2 {STANDARD_QUOTA_CODE}"


def planning_limits(aws: dict, rid: str | None = None, query: bool = True) -> tuple:
    """What the workflow packs its fleets for when it builds the DAG: (vCPU quota, its source, room, its source).
    The quota: config aws.vcpu_quota, else Service Quotas when credentials resolve (and `query`); the room for the
    fleets' VPCs (network_room) likewise. Either is None when not known now: the fleets are then planned all at
    once, and the onstart gate, which reads both before anything is created, refuses a plan they cannot hold."""
    quota, source = vcpu_quota(aws)
    if not query:
        return quota, source, None, ""
    import boto3

    session = boto3.session.Session(region_name=aws.get("region"))
    if session.get_credentials() is None:
        return quota, source, None, ""
    if quota is None:
        try:
            quota, source = vcpu_quota(aws, session)
        except AwsError:
            pass
    try:
        room, room_source = network_room(aws, session, rid)
    except AwsError:
        room, room_source = None, ""
    return quota, source, room, room_source


# Each fleet makes its own VPC and internet gateway (up.yml), counted by these quotas of the region (AWS's default:
# 5 each, one of them taken by the region's default VPC and its gateway)
NETWORK_QUOTAS = {"L-F678F1CE": "VPCs per Region", "L-A4707A72": "Internet gateways per Region"}
NETWORK_QUOTA_DEFAULT = 5


def _client_config():
    from botocore.config import Config

    return Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2})


def network_room(aws: dict, session, rid: str | None = None) -> tuple[int, str]:
    """How many fleets the region can hold at once besides what it holds: the smaller of (VPCs per Region minus
    the VPCs there) and (internet gateways per Region minus the gateways there), those of run `rid` (fleets of this
    run still up) not counted. A quota Service Quotas does not give is taken at AWS's default, and the source says
    so."""
    region = aws.get("region")
    ec2 = session.client("ec2", config=_client_config())

    def others(resources):
        return [r for r in resources if not any(t.get("Key") == "streambench:run" and t.get("Value") == rid
                                                for t in r.get("Tags") or [])]

    try:
        vpcs = len(others(ec2.describe_vpcs()["Vpcs"]))
        igws = len(others(ec2.describe_internet_gateways()["InternetGateways"]))
    except Exception as exc:  # noqa: BLE001 - botocore's errors, one line
        raise AwsError(f"AWS API ({region}): {str(exc).splitlines()[0]}") from None
    quotas, defaults = {}, []
    sq = session.client("service-quotas", config=_client_config())
    for code in NETWORK_QUOTAS:
        try:
            quotas[code] = int(sq.get_service_quota(ServiceCode="vpc", QuotaCode=code)["Quota"]["Value"])
        except Exception:  # noqa: BLE001 - not readable (permissions): AWS's default
            quotas[code] = NETWORK_QUOTA_DEFAULT
            defaults.append(code)
    vq, iq = quotas["L-F678F1CE"], quotas["L-A4707A72"]
    note = f"; {', '.join(defaults)} not readable, AWS's default taken" if defaults else ""
    return max(0, min(vq - vpcs, iq - igws)), (f"region {region}: {vpcs} VPCs of a quota of {vq}, {igws} internet"
                                               f" gateways of {iq}, Service Quotas vpc L-F678F1CE and L-A4707A72{note}")


def check_room(packing: Packing, room: int, source: str) -> None:
    """Before anything is created: the fleets the plan brings up at once fit the region's VPCs (one line if not)."""
    if packing.most > room:
        raise AwsError(f"the plan brings up to {packing.most} fleets up at once, each with its own VPC and internet"
                       f" gateway, but {source} leave room for {room}; set aws.parallel_fleets: {room} (or raise those"
                       " quotas)")


def check_packing(packing: Packing, quota: int | None, source: str, rows: list[FleetEstimate] | None = None) -> None:
    """Before anything is created: every fleet fits the quota alone (one line naming it), and the fleets the plan
    runs at once fit it together (one line naming the vCPUs and the keys that pack them within it)."""
    if quota is None:
        return
    if rows is not None:
        pack(rows, 1, quota, source)  # a fleet alone above the quota: its own line
    if packing.vcpus > quota:
        raise AwsError(f"the plan runs up to {packing.most} fleets at once ({packing.describe()}), up to {packing.vcpus}"
                       f" vCPUs, above the account's vCPU quota of {quota} ({source}); set aws.vcpu_quota: {quota}"
                       " (or a smaller aws.parallel_fleets) so that the workflow packs them within it")


def format_estimate(rows: list[FleetEstimate], prices: dict, aws: dict | None = None,
                    packing: Packing | None = None) -> str:
    lines = [f"aws estimate (on-demand list prices of {prices['region']}, {prices['date']}; time is an estimate):"]
    for r in rows:
        f = r.fleet
        life = f", powers off after {lifetime_hours(r, aws):.0f} h" if aws is not None else ""
        lines.append(
            f"  {f.name} (study {f.study}): {f.servers.count} x {f.servers.type} + {f.clients.count} x {f.clients.type}"
            f" ({f.vcpus} vCPUs), {r.runs} runs on {r.clusters} clusters, {r.hours:.1f} h,"
            f" {r.instance_hours:.0f} instance-hours, ${r.cost:,.0f}{life}"
        )
    total_ih = sum(r.instance_hours for r in rows)
    total = sum(r.cost for r in rows)
    hours = sum(r.hours for r in rows)
    lines.append(f"  total: {sum(r.runs for r in rows)} runs, {hours:.1f} h one fleet after another,"
                 f" {total_ih:.0f} instance-hours, ${total:,.0f}")
    if packing is not None:
        lines.append("  " + wall_time_line(packing))
    return "\n".join(lines)


def wall_time_line(packing: Packing) -> str:
    """The wall time of both settings: one fleet after another, and as packed (which fleets at once, their vCPUs)."""
    if packing.quota is None:
        quota = "the account's vCPU quota is checked before anything is created"
    else:
        quota = f"within the vCPU quota of {packing.quota} ({packing.quota_source})"
    if packing.fleets == 1:
        how = "its one fleet"
    elif packing.most == packing.fleets:
        how = f"all {packing.fleets} fleets at once"
    else:
        how = f"at most {packing.most} fleets at once ({packing.describe()})"
    return (f"wall time: {packing.sequential_hours:.1f} h one fleet after another (aws.parallel_fleets: 1);"
            f" {packing.hours:.1f} h with {how}, up to {packing.vcpus} vCPUs at once; {quota}")


def markdown_table(rows: list[FleetEstimate], prices: dict, packing: Packing | None = None) -> str:
    """The README's cost table (written by `python -m testbeds.aws estimate --markdown`): each fleet, then the wall
    time one fleet after another and with the fleets side by side as `packing` runs them (default: the default
    configuration's, every fleet at once)."""
    if packing is None:
        packing = pack(rows)
    out = [
        "| fleet | study | servers | clients | runs | hours | instance-hours | on-demand cost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = r.fleet
        out.append(f"| {f.name} | {f.study} | {f.servers.count} × {f.servers.type} | {f.clients.count} × {f.clients.type} |"
                   f" {r.runs} | {r.hours:.1f} | {r.instance_hours:.0f} | ${r.cost:,.0f} |")
    runs = sum(r.runs for r in rows)
    ih = f"{sum(r.instance_hours for r in rows):.0f}"
    cost = f"${sum(r.cost for r in rows):,.0f}"
    out.append(f"| all: one fleet after another (`aws.parallel_fleets: 1`) | | | | {runs} | {packing.sequential_hours:.1f} |"
               f" {ih} | {cost} |")
    if packing.most == packing.fleets:
        how = "every fleet at once"
    else:
        how = f"at most {packing.most} fleets at once ({packing.describe()})"
    default = "the default, " if packing.parallel is None else f"`aws.parallel_fleets: {packing.parallel}`, "
    out.append(f"| all: {how} ({default}{packing.vcpus} vCPUs up at once) | | | | {runs} | {packing.hours:.1f} | {ih} |"
               f" {cost} |")
    out.append("")
    out.append(f"Prices: `{prices.get('unit', 'USD per instance-hour')}`, {prices['region']}, as of {prices['date']}"
               " (testbeds/aws/prices.yaml). The hours of the `all` rows are wall time.")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------- preflight
def check_config(aws: dict) -> None:
    """The offline checks of the aws config (no credentials needed)."""
    if aws.get("region") not in known_regions():
        raise AwsError(f"config aws.region: unknown region '{aws.get('region')}'")


def check_confirm(aws: dict) -> None:
    if aws.get("confirm") is not True:
        state = "missing" if aws.get("confirm") is None else f"is {json.dumps(aws.get('confirm'))}"
        raise AwsError(f"config aws.confirm: {state}; set aws.confirm: true (e.g. --config aws='{{confirm: true}}'"
                       " or in env/profiles/aws/config.yaml) to accept the estimate above and create the resources")


def check_credentials(region: str):
    """A boto3 session with credentials from the standard chain, or one line saying none were found."""
    import boto3

    session = boto3.session.Session(region_name=region)
    if session.get_credentials() is None:
        raise AwsError("AWS credentials: none found in the standard chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,"
                       " AWS_PROFILE, ~/.aws/credentials, instance role)")
    return session


LIFETIME_MARGIN = 0.25  # aws.max_lifetime_hours null: each fleet powers off at its estimate + 25 %, whole hours


def lifetime_hours(row: FleetEstimate, aws: dict) -> float:
    """How long the instances of a fleet live: aws.max_lifetime_hours when set, else the fleet's own estimate
    plus LIFETIME_MARGIN, rounded up to a whole hour (the README table's s001, 76.8 h, gets 96 h; s002, 11.3 h,
    gets 15 h): every fleet of the plan fits by construction, on the same instances from its first run to its
    last, and a lost controller leaves each fleet's bill running at most a quarter beyond its estimate."""
    if aws.get("max_lifetime_hours") is not None:
        return float(aws["max_lifetime_hours"])
    return float(math.ceil(row.hours * (1 + LIFETIME_MARGIN) - 1e-9))


def check_lifetime(rows: list[FleetEstimate], aws: dict) -> None:
    """A fleet whose estimate exceeds its lifetime would power off mid-run: refused, one line naming the key."""
    for r in rows:
        if r.hours > lifetime_hours(r, aws):
            raise AwsError(f"config aws.max_lifetime_hours: {aws['max_lifetime_hours']} h is shorter than fleet"
                           f" {r.fleet.name}'s estimated {r.hours:.1f} h; its instances would power off mid-run")


def plan_from_config(config: dict, runs=None):
    """(fleets used, their estimate rows, prices) for the runs of the config (default: the whole scale)."""
    from systems import durability
    from workloads import drivers, plan as wplan

    aws = config["aws"]
    check_config(aws)
    fleets, est = load_fleets(aws["instances_file"])
    prices = load_prices(aws["prices_file"], aws["region"])
    doc = wplan.load(ROOT / config["workloads"]["experiments_file"])
    if runs is None:
        catalog = drivers.catalog(durability.load(ROOT / config["systems"]["durability_file"]))
        scale = config["workloads"]["scale"] or "aws"
        runs = wplan.expand(doc, catalog, scale, ROOT / config["workloads"]["experiments_file"],
                            only=config["workloads"]["experiments"])
        # the config's filters, as workloads/rules.smk applies them to the DAG
        w = config["workloads"]
        runs = wplan.select(runs, w.get("systems"), w.get("levels"), w.get("faults"))
    by_fleet = assign(runs, doc, fleets, aws["instances_file"])
    rows = estimate(by_fleet, fleets, est, prices, aws["prices_file"])
    return by_fleet, rows, prices


def packing_from_config(aws: dict, rows: list[FleetEstimate], limits: tuple | None = None) -> Packing:
    """The fleets at once of the config: aws.parallel_fleets within `limits` (planning_limits: the vCPU quota and
    the room for VPCs; default: aws.vcpu_quota alone, else not known: not limited)."""
    quota, source, room, room_source = limits if limits is not None else (*vcpu_quota(aws), None, "")
    return pack(rows, aws.get("parallel_fleets"), quota, source, room, room_source)

