"""Command-line behaviour of runner/bin/omb-run and omb-merge that needs no broker."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "runner"
BAD = RUNNER / "src" / "test" / "resources" / "bad"
GOOD = RUNNER / "src" / "test" / "resources" / "good"


@pytest.fixture(scope="module", autouse=True)
def built():
    if not (RUNNER / "target" / "omb-runner.jar").exists():
        pytest.fail("runner not built: run `mvn -q -f runner/pom.xml package` first")


def run(*args: str, cwd: Path = RUNNER) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUNNER / "bin" / "omb-run"), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["workload-zero-partitions", "workload-consumers-without-subscriptions",
                                  "workload-typo-field", "workload-payload-size-mismatch"])
def test_bad_workload_is_one_line_error_naming_file_and_field(name, tmp_path):
    f = BAD / f"{name}.yaml"
    expect = f.read_text().splitlines()[0].removeprefix("# expect: ")
    out = tmp_path / "out.json"
    p = run("--workload", str(f), "--driver", str(GOOD / "kafka.yaml"), "--output", str(out))
    assert p.returncode == 2
    err = [line for line in p.stderr.splitlines() if line.startswith("omb-run: error:")]
    assert len(err) == 1, p.stderr
    assert str(f) in err[0] and expect in err[0]
    assert not out.exists()


@pytest.mark.slow
def test_validate_only_accepts_good_files():
    p = run("--validate-only", "--workload", str(GOOD / "workload.yaml"), "--driver", str(GOOD / "pulsar.yaml"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ok:")


@pytest.mark.slow
def test_cluster_file_must_match_driver(tmp_path):
    c = tmp_path / "cluster.json"
    c.write_text(json.dumps({"system": "pulsar", "pulsar": {"serviceUrl": "pulsar://127.0.0.1:1", "httpUrl": "http://127.0.0.1:1"}}))
    p = run("--validate-only", "--workload", str(GOOD / "workload.yaml"), "--driver", str(GOOD / "kafka.yaml"), "--cluster", str(c))
    assert p.returncode == 2
    assert f"{c}: field 'kafka.bootstrapServers'" in p.stderr


@pytest.mark.slow
def test_unreachable_pulsar_fails_without_result(tmp_path):
    c = tmp_path / "cluster.json"
    c.write_text(json.dumps({"system": "pulsar", "pulsar": {"serviceUrl": "pulsar://127.0.0.1:9", "httpUrl": "http://127.0.0.1:9"}}))
    out = tmp_path / "r.json"
    p = run("--workload", str(GOOD / "workload.yaml"), "--driver", str(GOOD / "pulsar.yaml"), "--cluster", str(c),
            "--output", str(out), "--log", str(tmp_path / "r.log"))
    assert p.returncode == 1, p.stderr
    assert not out.exists()
    assert "run failed" in (tmp_path / "r.log").read_text()


@pytest.mark.slow
def test_merge_rejects_a_non_runner_file(tmp_path):
    f = tmp_path / "omb.json"
    f.write_text(json.dumps({"workload": "x"}))
    p = subprocess.run([str(RUNNER / "bin" / "omb-merge"), "--output", str(tmp_path / "m.json"), str(f)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert f"{f}: field 'x-streambench'" in p.stderr


@pytest.mark.slow
def test_validate_pairs_reports_every_pair_in_one_jvm(tmp_path):
    bad = BAD / "workload-zero-partitions.yaml"
    lst = tmp_path / "pairs.tsv"
    lst.write_text("# workload\tdriver\n"
                   f"{GOOD / 'workload.yaml'}\t{GOOD / 'kafka.yaml'}\n"
                   f"{bad}\t{GOOD / 'kafka.yaml'}\n"
                   "\n"
                   f"{GOOD / 'workload.yaml'}\t{GOOD / 'pulsar.yaml'}\n")
    p = run("--validate-only", "--pairs", str(lst))
    assert p.returncode == 2, p.stderr
    rows = [line.split("\t") for line in p.stdout.splitlines()]
    assert [r[0] for r in rows] == ["ok", "error", "ok"], p.stdout
    assert rows[1][1] == str(bad) and "partitionsPerTopic" in rows[1][3]
    assert "1 of 3 pairs are invalid" in p.stderr
    malformed = tmp_path / "malformed.tsv"
    malformed.write_text(f"{GOOD / 'workload.yaml'}\n")
    p = run("--validate-only", "--pairs", str(malformed))
    assert p.returncode == 2 and f"{malformed}: line 1: expected" in p.stderr
    p = run("--pairs", str(lst), "--output", str(tmp_path / "o.json"))
    assert p.returncode == 2 and "--pairs goes with --validate-only" in p.stderr


FANOUT = RUNNER / "testdata" / "fanout-200.yaml"


@pytest.mark.slow
def test_fanout_over_the_fd_limit_is_refused_before_anything_connects(tmp_path):
    # 200 Kafka consumers need about 1 000 + 6 x 200 open files in one runner process; a limit of 1 100 is too low
    # (bash's `ulimit -n` sets the soft and the hard limit, so omb-run cannot raise it back)
    out = tmp_path / "out.json"
    cmd = f"ulimit -n 1100 && exec {RUNNER / 'bin' / 'omb-run'} --workload {FANOUT} --driver {GOOD / 'kafka.yaml'} --output {out}"
    p = subprocess.run(["bash", "-c", cmd], cwd=RUNNER, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    err = [line for line in p.stderr.splitlines() if line.startswith("omb-run: error:")]
    assert len(err) == 1, p.stderr
    assert f"{FANOUT}: field 'subscriptionsPerTopic'" in err[0] and "open-file limit of 1100" in err[0], err[0]
    assert not out.exists()
    # --validate-only does not check this host's limit (the run may happen on other hosts; workloads/fanout.py checks
    # the scale's fd_limit before any cluster starts)
    cmd = f"ulimit -n 1100 && exec {RUNNER / 'bin' / 'omb-run'} --validate-only --workload {FANOUT} --driver {GOOD / 'kafka.yaml'}"
    p = subprocess.run(["bash", "-c", cmd], cwd=RUNNER, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_fanout_shared_subscription_on_kafka_is_refused(tmp_path):
    wl = tmp_path / "shared.yaml"
    doc = FANOUT.read_text().replace("subscriptionsPerTopic: 200", "subscriptionsPerTopic: 1").replace(
        "consumerPerSubscription: 1", "consumerPerSubscription: 200")
    wl.write_text(doc)
    p = run("--validate-only", "--workload", str(wl), "--driver", str(GOOD / "kafka.yaml"))
    assert p.returncode == 2
    assert f"{wl}: field 'consumerPerSubscription'" in p.stderr and "no shared subscription" in p.stderr, p.stderr


@pytest.mark.slow
def test_bad_pravega_driver_fields_are_one_line_errors_naming_file_and_field(tmp_path):
    bad = sorted(BAD.glob("driver-pravega-*.yaml"))
    assert len(bad) >= 10
    lst = tmp_path / "pairs.tsv"
    lst.write_text("".join(f"{GOOD / 'workload.yaml'}\t{f}\n" for f in bad))
    p = run("--validate-only", "--pairs", str(lst))  # one JVM for all
    assert p.returncode == 2, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == len(bad)
    for f, line in zip(bad, lines):
        status, _, driver, msg = line.split("\t")
        expect = f.read_text().splitlines()[0].removeprefix("# expect: ")
        assert status == "error" and driver == str(f), line
        assert msg.startswith(f"{f}: field '") and expect in msg, line
    # a real run stops on the same line before anything connects (the controller below does not exist)
    c = tmp_path / "cluster.json"
    c.write_text(json.dumps({"system": "pravega", "pravega": {"controllerUri": "tcp://127.0.0.1:9"}}))
    out = tmp_path / "r.json"
    p = run("--workload", str(GOOD / "workload.yaml"), "--driver", str(BAD / "driver-pravega-unknown-field.yaml"),
            "--cluster", str(c), "--output", str(out))
    assert p.returncode == 2
    err = [line for line in p.stderr.splitlines() if line.startswith("omb-run: error:")]
    assert err == [f"omb-run: error: {BAD / 'driver-pravega-unknown-field.yaml'}: field 'eventsPerSecnd': unknown field"
                   " (did you mean 'eventsPerSecond'?); known fields: client, createScope, deleteStreams, driverClass,"
                   " enableStreamAutoScaling, enableTransaction, eventPerTransaction, eventsPerSecond, eventsPerTransaction,"
                   " includeTimestampInEvent, kbytesPerSecond, name, writer"], p.stderr
    assert not out.exists()


@pytest.mark.slow
def test_ombs_pravega_driver_files_load_and_shared_subscriptions_are_refused_in_fan_out_runs(tmp_path):
    # a fan-out run (study 003) measures every consumer: idle readers would make it meaningless; a steady workload of
    # the same shape runs with a warning (the next test)
    for d in ("pravega.yaml", "pravega-exactly-once.yaml"):
        p = run("--validate-only", "--workload", str(GOOD / "workload.yaml"), "--driver", str(GOOD / d))
        assert p.returncode == 0 and "(pravega)" in p.stdout, p.stderr
    wl = tmp_path / "shared.yaml"
    wl.write_text(FANOUT.read_text().replace("subscriptionsPerTopic: 200", "subscriptionsPerTopic: 1").replace(
        "consumerPerSubscription: 1", "consumerPerSubscription: 200"))
    p = run("--validate-only", "--workload", str(wl), "--driver", str(GOOD / "pravega.yaml"))
    assert p.returncode == 2
    err = [line for line in p.stderr.splitlines() if line.startswith("omb-run: error:")]
    assert len(err) == 1 and f"{wl}: field 'consumerPerSubscription'" in err[0], p.stderr
    assert "Pravega has no shared subscription" in err[0]


def test_validate_only_accepts_more_pravega_readers_than_segments_with_a_warning(tmp_path):
    """Was refused ("Pravega has no shared subscription"); upstream OMB runs the shape, so the runner does too."""
    import yaml
    wl = yaml.safe_load((GOOD / "workload.yaml").read_text())
    wl["consumerPerSubscription"] = wl["partitionsPerTopic"] + 2
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(wl, sort_keys=False))
    p = run("--validate-only", "--workload", str(f), "--driver", str(GOOD / "pravega.yaml"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("ok: ") and any(
        ln.startswith("warning: ") and "2 reader(s) per group receive nothing and stay idle" in ln for ln in lines), lines
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{f}\t{GOOD / 'pravega.yaml'}\n")
    p = run("--validate-only", "--pairs", str(pairs))
    assert p.returncode == 0 and p.stdout.startswith("ok\t") and "\twarning: " in p.stdout, p.stdout + p.stderr
