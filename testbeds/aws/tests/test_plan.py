"""The estimate and the instances/price files: offline, no emulator."""
import re

import pytest

from testbeds.aws import plan
from testbeds.aws.__main__ import load_config
from testbeds.aws.plan import ROOT, AwsError


def test_the_aws_profile_plans_every_run_on_its_studys_fleet():
    by_fleet, rows, prices = plan.plan_from_config(load_config("aws", []))
    assert sum(len(v) for v in by_fleet.values()) == 1838  # with study 001's rate sweeps and study 000's fault cells, 650 of them (README.md's cost table)
    assert sorted(by_fleet) == ["s000", "s001", "s002", "s003", "s004"]
    assert sum(1 for r in by_fleet["s000"] if r.fault) == 650  # E000-FAULTCLAIM 20 cells, E000-FAULTHOLD 45, 10 each
    assert len(by_fleet["s003"]) == 12  # study 003: E003-BASE on both systems, E003-SHARED on Pulsar, 4 sizes each
    assert rows[0].fleet.servers.type == "i3en.2xlarge" and rows[0].fleet.servers.count == 3
    for r in rows:
        per_hour = (r.fleet.servers.count * prices["prices"][r.fleet.servers.type]
                    + r.fleet.clients.count * prices["prices"][r.fleet.clients.type])
        assert r.cost == pytest.approx(r.hours * per_hour)


def test_a_backlog_run_includes_the_time_to_build_the_backlog():
    from workloads.plan import Run

    est = plan.load_fleets("testbeds/aws/instances.yaml")[1]
    backlog = Run("kafka", "L1", "tuned", None, "1-topic-100-partitions-1kb-2p-2c-200k-backlog", None, 1)
    plain = Run("kafka", "L1", "tuned", None, "1-topic-100-partitions-1kb-2p-2c-200k", None, 1)
    # 512 GiB at 200K msg/s of 1 KiB, and its 5 measured minutes instead of 3
    assert plan.run_seconds(backlog, est) - plan.run_seconds(plain, est) == pytest.approx(
        512 * 1024**3 / (200000 * 1024) + 2 * 60)


def test_a_fanout_run_includes_its_connect_deadline():
    from workloads.plan import Run

    est = plan.load_fleets("testbeds/aws/instances.yaml")[1]
    fan = Run("pulsar", "L1", "stock", None, "1-topic-1-partition-10kb-1p-1c-20ksub-1", None, 1)
    # 1 + 5 minutes of warm-up and test, the run overhead, and up to an hour connecting 20 000 consumers
    assert plan.run_seconds(fan, est) == pytest.approx(6 * 60 + est["run_overhead_seconds"] + 3600)


def test_the_readme_cost_table_is_the_one_the_code_computes():
    _, rows, prices = plan.plan_from_config(load_config("aws", []))
    readme = (ROOT / "README.md").read_text()
    assert plan.markdown_table(rows, prices) in readme


def test_every_fleet_cites_the_studies():
    text = (ROOT / "testbeds/aws/instances.yaml").read_text()
    for study in ("000", "001", "002", "003", "004"):
        assert re.search(rf"studies\.md {study}\.1", text), study


def test_confirm_missing_or_false_names_the_key():
    with pytest.raises(AwsError, match=r"^config aws\.confirm: missing;"):
        plan.check_confirm({"confirm": None})
    with pytest.raises(AwsError, match=r"^config aws\.confirm: is false;"):
        plan.check_confirm({"confirm": False})


def test_a_fleet_longer_than_the_lifetime_is_refused():
    _, rows, _ = plan.plan_from_config(load_config("aws", []))
    with pytest.raises(AwsError, match=r"^config aws\.max_lifetime_hours: 10 h is shorter than fleet s000"):
        plan.check_lifetime(rows, {"max_lifetime_hours": 10})


def test_the_default_configuration_passes_its_own_lifetime_gate():
    """Issue 30, blocker 4: env/config.yaml + the aws profile, as `snakemake -n --profile aws all` plans it
    (its longest fleet, s001, is estimated at 76.8 h), passes check_lifetime; each fleet powers off at its own
    estimate plus 25 %, whole hours, and that is what its user data says."""
    from testbeds.aws import provision

    cfg = load_config("aws", [])
    assert cfg["aws"]["max_lifetime_hours"] is None
    _, rows, prices = plan.plan_from_config(cfg)
    plan.check_lifetime(rows, cfg["aws"])
    longest = max(rows, key=lambda r: r.hours)
    assert longest.fleet.name == "s001" and longest.hours > 72
    for r in rows:
        life = plan.lifetime_hours(r, cfg["aws"])
        assert life >= 1.2 * r.hours and life == int(life) and life - 1 < 1.25 * r.hours, r.fleet.name
    assert plan.lifetime_hours(longest, cfg["aws"]) == 96
    ud = provision.user_data(longest.fleet, "server", plan.lifetime_hours(longest, cfg["aws"]))
    assert "--on-active=5760m" in ud
    assert "s001 (study 001)" in plan.format_estimate(rows, prices, cfg["aws"])
    assert "powers off after 96 h" in plan.format_estimate(rows, prices, cfg["aws"])


def test_a_lifetime_too_short_for_a_single_run_is_one_line():
    """An explicit aws.max_lifetime_hours still gates every fleet: one study-003 fan-out run (about 1.7 h with
    its fleet's overheads) cannot fit in 1 h, and nothing would split it."""
    cfg = load_config("aws", ["aws.max_lifetime_hours=1"])
    by_fleet, rows, _ = plan.plan_from_config(cfg)
    (one,) = [r for r in by_fleet["s003"] if "20ksub" in r.base_workload][:1]
    _, rows, _ = plan.plan_from_config(cfg, runs=[one])
    assert rows[0].runs == 1 and rows[0].hours > 1
    with pytest.raises(AwsError) as e:
        plan.check_lifetime(rows, cfg["aws"])
    assert str(e.value) == (f"config aws.max_lifetime_hours: 1 h is shorter than fleet s003's estimated"
                            f" {rows[0].hours:.1f} h; its instances would power off mid-run")
