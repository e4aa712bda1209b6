"""Resuming after an error (issue 30, blocker 7): the teardown marks every fleet it takes down that is not done
(torn-down.json beside its inventory.json / prepared.json), and aws_up takes that marker as an input, so a rerun
provisions the fleet anew instead of running the remaining runs against dead hosts. Against moto's server."""
import json
import os
import shutil
import time

from testbeds.aws import provision
from testbeds.aws.tests.test_provision import RUN, config


def _inventory(path, rid, fleet):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": rid, "testbed": "aws", "provider": {"fleet": fleet}}))


def other_fleets(fleets, inv) -> None:
    """Beside fleet s002 (up, at `inv`; the caller brought it up): s002 prepared, its runs under way; s000 finished
    earlier (aws_down wrote down.json); s003's files belong to another run."""
    shutil.copy(inv, fleets / "s002" / "prepared.json")
    _inventory(fleets / "s000" / "prepared.json", RUN, "s000")
    (fleets / "s000" / "down.json").write_text("{}\n")
    _inventory(fleets / "s003" / "inventory.json", "other-run", "s003")
    assert all(provision.aws_up_inputs(f, fleets) == [] for f in ("s000", "s002", "s003"))
    time.sleep(0.05)


def check_marks(fleets) -> None:
    """After the run's teardown: s002 (up, not done) is marked torn down, newer than its inventory and prepared.json
    (Snakemake reruns aws_up, then aws_prepare); s000 (done) and s003 (another run's) are not; once the rerun has
    brought s002 up again and finished it (aws_down's down.json), the marker is moot. The bring-up and teardown
    themselves run in test_provision.py's test_up_creates_exactly_the_plan_and_down_leaves_nothing (one playbook run
    each on the emulator, shared with that test's checks)."""
    marker = fleets / "s002" / provision.TORN_DOWN
    assert provision.aws_up_inputs("s002", fleets) == [str(marker)]
    assert json.loads(marker.read_text())["run"] == RUN and json.loads(marker.read_text())["fleet"] == "s002"
    for name in ("inventory.json", "prepared.json"):
        assert os.stat(marker).st_mtime_ns > os.stat(fleets / "s002" / name).st_mtime_ns
    assert provision.aws_up_inputs("s000", fleets) == [] and not (fleets / "s000" / provision.TORN_DOWN).exists()
    assert provision.aws_up_inputs("s003", fleets) == [] and not (fleets / "s003" / provision.TORN_DOWN).exists()
    (fleets / "s002" / "down.json").write_text("{}\n")
    assert provision.aws_up_inputs("s002", fleets) == []


def test_teardown_of_one_fleet_marks_only_that_fleet_even_when_nothing_is_left_to_remove(aws, tmp_path):
    """A fleet past its lifetime has terminated itself: nothing carries the tag, its files are still dead."""
    fleets = tmp_path / "fleets"
    _inventory(fleets / "s002" / "inventory.json", RUN, "s002")
    _inventory(fleets / "s004" / "inventory.json", RUN, "s004")
    assert provision.down(config(), RUN, tmp_path / "down.log", fleet="s002", fleets_dir=fleets) == {}
    assert provision.aws_up_inputs("s002", fleets) == [str(fleets / "s002" / provision.TORN_DOWN)]
    assert provision.aws_up_inputs("s004", fleets) == []
