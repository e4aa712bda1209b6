"""The drain of a run split over client hosts that share no file system: testbeds.runner.coordinate_drain against a
real sshd on 127.0.0.1. Each "runner" here is a shell process that does what the runner does in its drain wait with
--barrier DIR --barrier-coordinated: it rewrites its state (`acked N`, `sub NAME N`) in its own host's directory while
its consumers read, and stops when `drained` appears there. Before, each part judged its drain alone by a quiet spell
of 3 s, and a part whose consumers went quiet under load stopped with messages of its partitions unread (1 110 of
10 291 reported lost at L1 in the AWS rehearsal, docs/measurements.yaml env-test-fresh-c2bc219)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from testbeds import inventory
from testbeds.runner import coordinate_drain, drain_agreed
from testbeds.tests.localsshd import inventory_doc, needs_sshd

# d i acked: receives `steps` batches of `per` messages, one every `pause` s (a long pause: consumers gone quiet)
RUNNER_LIKE = r"""
d=$1; i=$2; acked=$3; per=$4; steps=$5; pause=$6
mkdir -p "$d"; got=0; n=0
while [ ! -f "$d/drained" ]; do
  printf 'acked %s\nsub s-0 %s\n' "$acked" "$got" > "$d/.drain-$i.tmp"; mv "$d/.drain-$i.tmp" "$d/drain-$i"
  if [ "$n" -lt "$steps" ]; then sleep "$pause"; got=$((got + per)); n=$((n + 1)); else sleep 0.2; fi
done
echo "$got"
"""


def test_the_rule_sums_every_subscription_over_the_processes():
    assert not drain_agreed(["acked 5153\nsub s-0 4090\n", "acked 5138\nsub s-0 5091\n"])  # the rehearsal's run
    assert drain_agreed(["acked 5153\nsub s-0 5200\n", "acked 5138\nsub s-0 5091\n"])
    assert not drain_agreed([None, "acked 1\nsub s-0 9\n"]) and not drain_agreed(["", "acked 1\nsub s-0 9\n"])
    assert not drain_agreed(["acked 4\nsub a 4\nsub b 1\n", "acked 0\nsub a 0\nsub b 2\n"])


def test_a_fan_out_parts_whole_subscriptions_hold_the_drain_by_their_fewest():
    """The runner's compact state (Barrier.drainState): the subscriptions whole in a process are one line."""
    assert not drain_agreed(["acked 6\nwhole 2 9\n", "acked 4\nwhole 1 10\n"])
    assert drain_agreed(["acked 6\nwhole 2 10\n", "acked 4\nwhole 1 10\n"])
    assert not drain_agreed(["acked 6\nwhole 2 10\nsub s 5\n", "acked 4\nsub s 4\n"])
    assert drain_agreed(["acked 6\nwhole 2 10\nsub s 5\n", "acked 4\nsub s 5\n"])
    assert not drain_agreed(["acked 6\nwhole 3 10\n", None]) and drain_agreed(["acked 6\nwhole 3 10\n", "acked 4\n"])


@needs_sshd
def test_parts_drain_when_all_of_them_have_read_everything_not_when_one_falls_quiet(sshd, tmp_path):
    sshd.start()
    inv = inventory.check(inventory_doc(tmp_path, sshd), tmp_path / "inventory.json")
    hosts = [(h, str(tmp_path / "hosts" / h.name / "bench" / "barrier")) for h in inv.hosts[:2]]
    # 1 000 acknowledged by each; part 0 reads 1 500 fast, part 1 reads 500 after a 5-s quiet spell (longer than the
    # 3 s after which a part alone called itself drained)
    procs = [subprocess.Popen(["bash", "-c", RUNNER_LIKE, "runner", hosts[0][1], "0", "1000", "500", "3", "0.3"],
                              stdout=subprocess.PIPE, text=True),
             subprocess.Popen(["bash", "-c", RUNNER_LIKE, "runner", hosts[1][1], "1", "1000", "500", "1", "5"],
                              stdout=subprocess.PIPE, text=True)]
    t0 = time.monotonic()
    try:
        assert coordinate_drain(hosts, lambda: all(p.poll() is None for p in procs), poll_s=0.5, deadline_s=60)
        took = time.monotonic() - t0
        outs = [int(p.communicate(timeout=30)[0]) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert outs == [1500, 500] and took >= 5  # both stopped only once the quiet part had read its share
    assert all(Path(d, "drained").read_text() == "1" for _, d in hosts)  # written on every host


@needs_sshd
def test_when_the_runners_end_first_the_coordinator_stops_without_a_drain(sshd, tmp_path):
    sshd.start()
    inv = inventory.check(inventory_doc(tmp_path, sshd), tmp_path / "inventory.json")
    hosts = [(h, str(tmp_path / "hosts" / h.name / "bench" / "barrier")) for h in inv.hosts[:2]]
    procs = [subprocess.Popen(["sleep", "1"]) for _ in hosts]  # ended at their own deadline, nothing written
    assert not coordinate_drain(hosts, lambda: any(p.poll() is None for p in procs), poll_s=0.2, deadline_s=30)
    assert not any(Path(d, "drained").exists() for _, d in hosts)
