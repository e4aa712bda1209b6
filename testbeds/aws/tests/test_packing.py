"""Fleets side by side (issue 30, blocker 10): which fleets run at once within aws.parallel_fleets and the account's
vCPU quota, the wall time of both settings, and the one line for a fleet the quota cannot hold. Offline."""
import itertools
import random
import subprocess

import pytest

from testbeds.aws import plan
from testbeds.aws.__main__ import load_config
from testbeds.aws.plan import ROOT, AwsError

# vCPUs of the committed fleets (instances.yaml: 3 servers + clients, 2 vCPUs per core)
VCPUS = {"s000": 3 * 8 + 4 * 32, "s001": 3 * 16 + 2 * 16, "s002": 3 * 16 + 2 * 32, "s003": 3 * 16 + 32,
         "s004": 3 * 24 + 4 * 32}


@pytest.fixture(scope="module")
def rows():
    return plan.plan_from_config(load_config("aws", []))[1]


def fake_rows(spec: dict) -> list:
    """FleetEstimates of made-up fleets: name -> (hours, vCPUs); one server type of `vcpus // 4` vCPUs x 4 hosts."""
    out = []
    for name, (hours, vcpus) in spec.items():
        g = plan.Group("m5.large", 2, vcpus // 4)
        fleet = plan.Fleet(name, "999", plan.Group("i3.large", 2, vcpus // 4), g, 1, {}, None)
        assert fleet.vcpus == vcpus
        out.append(plan.FleetEstimate(fleet, 1, 1, hours, hours * 4, 0.0))
    return out


def up_together_at_most(packing: plan.Packing, width: dict) -> tuple[int, int]:
    """The most vCPUs and fleets that the DAG's precedence lets be up at the same time, whatever the durations:
    the heaviest set of fleets none of which waits (directly or not) for another."""
    names = sorted(packing.after)
    waits = {f: set(packing.after[f]) for f in names}
    changed = True
    while changed:  # transitive closure
        changed = False
        for f in names:
            more = set().union(*(waits[g] for g in waits[f])) - waits[f]
            if more:
                waits[f] |= more
                changed = True
    vcpus = most = 0
    for k in range(1, len(names) + 1):
        for group in itertools.combinations(names, k):
            if all(a not in waits[b] and b not in waits[a] for a, b in itertools.combinations(group, 2)):
                vcpus, most = max(vcpus, sum(width[f] for f in group)), max(most, k)
    return vcpus, most


def simulate(packing: plan.Packing, durations: dict, width: dict) -> tuple[float, int]:
    """Bring each fleet up as soon as every fleet it waits for is down, with these (real) durations: the wall time
    and the most vCPUs up at once."""
    start, end, most = {}, {}, 0
    while len(end) < len(packing.after):
        for f in sorted(packing.after):
            if f not in start and all(g in end for g in packing.after[f]):
                start[f] = max((end[g] for g in packing.after[f]), default=0.0)
                end[f] = start[f] + durations[f]
        for t in sorted(set(start.values())):
            most = max(most, sum(width[f] for f in start if start[f] <= t < end[f]))
    return max(end.values()), most


def test_the_fleets_vcpus_come_from_the_instances_file(rows):
    assert {r.fleet.name: r.fleet.vcpus for r in rows} == VCPUS


def test_by_default_every_fleet_runs_at_once_and_the_wall_time_is_the_longest_fleet(rows):
    """Unset parallel_fleets, no quota known (or a quota that holds all 624 vCPUs): no fleet waits for another."""
    hours = {r.fleet.name: r.hours for r in rows}
    for quota in (None, sum(VCPUS.values())):
        p = plan.pack(rows, None, quota)
        assert p.after == {f: () for f in VCPUS}
        assert p.most == 5 and p.vcpus == 624 and p.note() is None
        assert p.hours == pytest.approx(max(hours.values())) and round(p.hours, 1) == 76.8  # s001, the longest
        assert round(p.sequential_hours, 1) == 189.8 and p.sequential_hours == pytest.approx(sum(hours.values()))
    text = plan.format_estimate(rows, plan.load_prices("testbeds/aws/prices.yaml", "us-east-1"), None, plan.pack(rows))
    assert ("wall time: 189.8 h one fleet after another (aws.parallel_fleets: 1); 76.8 h with all 5 fleets at once,"
            " up to 624 vCPUs at once") in text


def test_parallel_fleets_1_is_one_fleet_after_another_in_name_order(rows):
    p = plan.pack(rows, 1, None)
    assert p.after == {"s000": (), "s001": ("s000",), "s002": ("s001",), "s003": ("s002",), "s004": ("s003",)}
    assert p.most == 1 and p.vcpus == max(VCPUS.values())
    assert p.hours == pytest.approx(p.sequential_hours)
    assert p.note().startswith("config aws.parallel_fleets is 1: one fleet at a time (s000 first; s001 after s000;")


def test_two_groups_when_the_quota_holds_two_fleets_at_a_time():
    rows = fake_rows({"a": (10.0, 100), "b": (10.0, 100), "c": (10.0, 100), "d": (10.0, 100)})
    p = plan.pack(rows, None, 200)
    assert p.after == {"a": (), "b": (), "c": ("a", "b"), "d": ("a", "b")}
    assert (p.most, p.vcpus, p.hours, p.sequential_hours) == (2, 200, 20.0, 40.0)
    assert p.describe() == "a, b at once; c after a, b; d after a, b"
    assert p.note() == ("the 4 fleets' 400 vCPUs exceed the vCPU quota of 200 (config aws.vcpu_quota): at most 2 fleets"
                        " at once (a, b at once; c after a, b; d after a, b), up to 200 vCPUs, 20.0 h wall time"
                        " (all at once: 10.0 h)")
    # parallel_fleets alone gives the same two groups; with both, the stricter wins
    assert plan.pack(rows, 2, None).after == p.after
    assert plan.pack(rows, 3, 200).after == p.after


def test_longest_first_and_a_shorter_fleet_that_fits_goes_ahead():
    """Quota 300: x, the longest, and y start; z (200 vCPUs) does not fit beside them, w (100) does and goes ahead of
    it; z starts once y and w are down, and waits for exactly those two."""
    rows = fake_rows({"x": (30.0, 100), "y": (10.0, 100), "z": (8.0, 200), "w": (5.0, 100)})
    p = plan.pack(rows, None, 300)
    assert p.start == {"x": 0.0, "y": 0.0, "w": 0.0, "z": 10.0}
    assert p.after == {"x": (), "y": (), "w": (), "z": ("w", "y")}
    assert (p.hours, p.vcpus, p.most) == (30.0, 300, 3)


@pytest.mark.parametrize("quota", [200, 232, 300, 400, 500])
def test_whatever_the_real_durations_the_fleets_up_together_fit_the_quota(rows, quota):
    """The DAG's order, not the estimate, keeps the quota: no set of fleets that may overlap exceeds it, and
    simulated runs with durations far from the estimates never have more vCPUs up."""
    p = plan.pack(rows, None, quota)
    vcpus, most = up_together_at_most(p, VCPUS)
    assert vcpus <= quota and vcpus == p.vcpus and most == p.most
    assert p.hours < p.sequential_hours and p.note().startswith(f"the 5 fleets' 624 vCPUs exceed the vCPU quota of {quota}")
    rng = random.Random(quota)
    for _ in range(200):
        durations = {f: rng.uniform(0.1, 3.0) * h for f, h in ((r.fleet.name, r.hours) for r in rows)}
        assert simulate(p, durations, VCPUS)[1] <= quota
    # the estimate itself: the simulated wall time with the estimated durations is the packing's
    assert simulate(p, {r.fleet.name: r.hours for r in rows}, VCPUS)[0] == pytest.approx(p.hours)


def test_parallel_fleets_caps_the_fleets_at_once(rows):
    for n in (2, 3, 4):
        p = plan.pack(rows, n, None)
        assert up_together_at_most(p, VCPUS)[1] == n == p.most
        assert p.hours <= plan.pack(rows, n - 1, None).hours


def test_a_fleet_alone_above_the_quota_is_one_line_naming_it_its_vcpus_and_the_quota(rows):
    with pytest.raises(AwsError) as e:
        plan.pack(rows, None, 199)
    assert str(e.value) == ("fleet s004 alone needs 200 vCPUs (3 x i3en.6xlarge + 4 x m5n.8xlarge), more than the"
                            " account's vCPU quota of 199 (config aws.vcpu_quota); nothing is created")
    with pytest.raises(AwsError, match=r"^fleet s004 alone needs 200 vCPUs .* quota of 199 \(Service Quotas"):
        plan.check_packing(plan.pack(rows), 199, "Service Quotas ec2 L-1216C47A", rows)


def test_the_gate_refuses_a_plan_packed_for_more_than_the_quota_read_later(rows):
    """Planned without a known quota (all at once), then the quota read before anything is created holds fewer."""
    p = plan.pack(rows)
    with pytest.raises(AwsError) as e:
        plan.check_packing(p, 400, "Service Quotas ec2 L-1216C47A", rows)
    assert str(e.value).startswith("the plan runs up to 5 fleets at once (s000, s001, s002, s003, s004 at once), up to"
                                   " 624 vCPUs, above the account's vCPU quota of 400 (Service Quotas ec2 L-1216C47A);"
                                   " set aws.vcpu_quota: 400")
    plan.check_packing(plan.pack(rows, None, 400), 400, "Service Quotas ec2 L-1216C47A", rows)  # packed for it: passes


def test_the_instances_file_must_state_each_types_vcpus(tmp_path):
    text = (ROOT / "testbeds/aws/instances.yaml").read_text()
    f = tmp_path / "instances.yaml"
    f.write_text(text.replace("  c5.4xlarge: 16\n", ""))
    with pytest.raises(AwsError, match=r"instances\.yaml: vcpus\.c5\.4xlarge: missing or not a positive whole number"):
        plan.load_fleets(f)
    f.write_text(text.replace("type: c5.4xlarge", "type: p3.8xlarge"))
    with pytest.raises(AwsError, match=r"fleets\.s001\.clients\.type: p3\.8xlarge is not an On-Demand Standard instance"):
        plan.load_fleets(f)


def cli(*args):
    return subprocess.run(["python", "-m", "testbeds.aws", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_estimate_prints_both_wall_times_and_a_quota_too_small_for_one_fleet_is_one_line():
    r = cli("--set", "aws.vcpu_quota=300", "estimate")
    assert r.returncode == 0, r.stderr
    assert "wall time: 189.8 h one fleet after another (aws.parallel_fleets: 1); 98.7 h with at most 2 fleets at once" in r.stdout
    assert "within the vCPU quota of 300 (config aws.vcpu_quota)" in r.stdout
    r = cli("--set", "aws.vcpu_quota=100", "estimate")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == ["aws: fleet s000 alone needs 152 vCPUs (3 x i3en.2xlarge + 4 x m5n.8xlarge), more"
                                     " than the account's vCPU quota of 100 (config aws.vcpu_quota); nothing is created"]
