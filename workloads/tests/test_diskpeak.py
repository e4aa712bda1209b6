"""workloads.diskpeak: the peak of a file system's use while a command ran, and the command's exit status."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_peak_above_start_and_exit_status(tmp_path):
    cmd = [sys.executable, "-m", "workloads.diskpeak", "--path", str(tmp_path), "--interval", "0.1", "--du-every", "0.2",
           "--", "sh", "-c", f"dd if=/dev/zero of={tmp_path}/x bs=1M count=64 status=none; sleep 1; rm {tmp_path}/x; exit 3"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("diskpeak: ")
    grew = float(line.split("(+")[1].split(" GB")[0])
    under = float(line.split(f"under {tmp_path}: peak ")[1].split(" GB")[0])
    assert grew >= 0.05 and under >= 0.06, line


def test_peak_names_the_cluster_directory_holding_most(tmp_path):
    """The peak is attributed to the cluster directory (one with a cluster.json) holding the most bytes then."""
    big, small = tmp_path / "runs" / "clusters" / "pulsar-L3-x", tmp_path / "runs" / "clusters" / "kafka-L1-y"
    script = (f"mkdir -p {big}/nodes/bookie-1 {small}/nodes/kafka-1 && echo '{{}}' > {big}/cluster.json && "
              f"echo '{{}}' > {small}/cluster.json && "
              f"dd if=/dev/zero of={big}/nodes/bookie-1/log bs=1M count=48 status=none && "
              f"dd if=/dev/zero of={small}/nodes/kafka-1/log bs=1M count=8 status=none && sleep 1 && "
              f"rm -r {tmp_path}/runs")
    cmd = [sys.executable, "-m", "workloads.diskpeak", "--path", str(tmp_path), "--interval", "0.1", "--du-every", "0.2",
           "--", "sh", "-c", script]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip().splitlines()[-1]
    held = line.split("of which ")[1]
    assert held.endswith(f"in cluster directory {big}"), line
    assert 0.045 <= float(held.split(" GB")[0]) <= 0.06, line
