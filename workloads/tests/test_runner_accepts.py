"""Every scaled workload of every scale, with its generated driver, passes the runner's own validation.

This ties experiments.yaml, the scales, workloads/omb/ and the generated drivers to what the runner really
accepts (its strict parser), without a broker: `omb-run --validate-only` connects to nothing.
"""
import subprocess

import pytest
import yaml

from workloads import drivers, plan, scale

RUNNER = plan.HERE.parent / "runner" / "bin" / "omb-run"
JAR = plan.HERE.parent / "runner" / "target" / "omb-runner.jar"


def cases():
    """Each distinct scaled workload (a sweep's rate points differ only in producerRate, checked once) with
    its system's default driver, then each generated driver file with one small workload."""
    doc = plan.load()
    cat = drivers.catalog()
    out, seen = [], set()
    for sc in doc["scales"]:
        for r in plan.expand(doc, cat, sc):
            wl, _ = scale.scale_workload(yaml.safe_load((plan.OMB_DIR / f"{r.base_workload}.yaml").read_text()),
                                         doc["scales"][sc], r.rate)
            shape = yaml.safe_dump({**wl, "producerRate": min(wl["producerRate"], 1)}, sort_keys=True)
            if (shape, r.system) not in seen:
                seen.add((shape, r.system))
                out.append(pytest.param(wl, drivers.render(r.system, r.level, r.tuning, r.variant, doc),
                                        id=f"{sc}:{r.system}:{r.workload_id}"))
    small = yaml.safe_load((plan.OMB_DIR / "1-topic-100-partitions-1kb-2p-2c-200k.yaml").read_text())
    for f in sorted(drivers.DRIVERS_DIR.glob("*.yaml")):
        out.append(pytest.param(small, f.read_text(), id=f"driver:{f.stem}"))
    return out


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """Every case validated by one `omb-run --validate-only --pairs` call (one JVM, not one per case):
    {case id: (verdict, message)}."""
    if not JAR.is_file():
        pytest.fail(f"{JAR} is not built: env/test builds it (mvn -f runner/pom.xml package) before pytest")
    d = tmp_path_factory.mktemp("pairs")
    lines, ids = [], {}
    for n, c in enumerate(cases()):
        wl, driver_text = c.values
        w, dr = d / f"{n}-workload.yaml", d / f"{n}-driver.yaml"
        w.write_text(yaml.safe_dump(wl, sort_keys=False))
        dr.write_text(driver_text)
        lines.append(f"{w}\t{dr}")
        ids[str(w)] = c.id
    (d / "pairs.tsv").write_text("\n".join(lines) + "\n")
    res = subprocess.run([str(RUNNER), "--validate-only", "--pairs", str(d / "pairs.tsv")],
                         capture_output=True, text=True, timeout=600)
    out = {}
    for row in res.stdout.splitlines():
        f = row.split("\t")
        out[ids[f[1]]] = (f[0], f[3] if len(f) > 3 else "")
    assert len(out) == len(lines), f"omb-run answered {len(out)} of {len(lines)} pairs: {res.stderr}"
    return out


@pytest.mark.parametrize("case_id", [c.id for c in cases()])
def test_runner_accepts_scaled_workload_and_driver(verdicts, case_id):
    verdict, message = verdicts[case_id]
    assert verdict == "ok", message
