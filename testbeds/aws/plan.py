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
from dataclasses import dataclass
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
    def hosts(self) -> list[tuple[str, str, str]]:
        """(host name, role, instance type) of every instance, servers first."""
        return [(f"{self.name}-server-{i}", "server", self.servers.type) for i in range(1, self.servers.count + 1)] + [
            (f"{self.name}-client-{i}", "client", self.clients.type) for i in range(1, self.clients.count + 1)
        ]


def load_fleets(path) -> tuple[dict[str, Fleet], dict]:
    """The fleets of the instances file and its `estimate` overheads; every field checked."""
    doc = _load_yaml(path)
    where = _rel(ROOT / path)
    fleets: dict[str, Fleet] = {}
    types = known_instance_types()
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


def format_estimate(rows: list[FleetEstimate], prices: dict, aws: dict | None = None) -> str:
    lines = [f"aws estimate (on-demand list prices of {prices['region']}, {prices['date']}; time is an estimate):"]
    for r in rows:
        f = r.fleet
        life = f", powers off after {lifetime_hours(r, aws):.0f} h" if aws is not None else ""
        lines.append(
            f"  {f.name} (study {f.study}): {f.servers.count} x {f.servers.type} + {f.clients.count} x {f.clients.type},"
            f" {r.runs} runs on {r.clusters} clusters, {r.hours:.1f} h, {r.instance_hours:.0f} instance-hours,"
            f" ${r.cost:,.0f}{life}"
        )
    total_ih = sum(r.instance_hours for r in rows)
    total = sum(r.cost for r in rows)
    hours = sum(r.hours for r in rows)
    lines.append(f"  total: {sum(r.runs for r in rows)} runs, {hours:.1f} h one fleet after another,"
                 f" {total_ih:.0f} instance-hours, ${total:,.0f}")
    return "\n".join(lines)


def markdown_table(rows: list[FleetEstimate], prices: dict) -> str:
    """The README's cost table (written by `python -m testbeds.aws estimate --markdown`)."""
    out = [
        "| fleet | study | servers | clients | runs | hours | instance-hours | on-demand cost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = r.fleet
        out.append(f"| {f.name} | {f.study} | {f.servers.count} × {f.servers.type} | {f.clients.count} × {f.clients.type} |"
                   f" {r.runs} | {r.hours:.1f} | {r.instance_hours:.0f} | ${r.cost:,.0f} |")
    out.append(f"| all | | | | {sum(r.runs for r in rows)} | {sum(r.hours for r in rows):.1f} |"
               f" {sum(r.instance_hours for r in rows):.0f} | ${sum(r.cost for r in rows):,.0f} |")
    out.append("")
    out.append(f"Prices: `{prices.get('unit', 'USD per instance-hour')}`, {prices['region']}, as of {prices['date']}"
               " (testbeds/aws/prices.yaml).")
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
    by_fleet = assign(runs, doc, fleets, aws["instances_file"])
    rows = estimate(by_fleet, fleets, est, prices, aws["prices_file"])
    return by_fleet, rows, prices

