"""A temp copy of paper/ with fake-but-valid analysis outputs (figures, tables, _variables.yml).

Faking is fine here: the paper stage only arranges these files; their numbers are analysis' business.
"""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from paper.ids import FIGURE_IDS, TABLE_IDS

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "paper"
SOURCES = ["paper.md", "_quarto.yml", "style.css", "render-header.typ", "sections"]  # the sources of the paper (files or folders)


def copy_sources(src: Path, paper: Path) -> None:
    """Copy the paper's sources (SOURCES) from src/ into paper/."""
    for name in SOURCES:
        if (src / name).is_dir():
            shutil.copytree(src / name, paper / name)
        else:
            shutil.copy(src / name, paper / name)

# documented in analysis/README.md ("paper/_variables.yml keys"), plus the derived.* keys paper.md uses
FAKE_VARIABLES = {
    "published": {"files": 124, "distinct_files": 100, "repo": "example/omb", "commit": "0123abc",
                  "testbed": "aws i3en.2xlarge (study 000)"},
    "claims": {"total": 10, "matched": 7, "differ": 2, "no_data": 1, "ambiguous": 3, "matched_pct": 78},
    "local": {"runs": 0, "testbed": "ci", "suspect": 0, "suspect_excluded": 0, "suspect_mode": "mark"},
    "versions": {"kafka": "n/a", "pulsar": "n/a"},
    "studies": {"count": 5, "ids": "000–004", "others": 4, "numbers": 203, "systems_count": 3,
                "systems": "Kafka, Pulsar and Pravega"},
    "testbed": {"cpu": "Fake CPU 9000", "cores": 2, "mem_gib": 24, "kernel": "6.1.0", "os": "Debian 12",
                "disk_write_mbps": 812.5, "fsync_p99_ms": 4.08},
    "coverage": {k: {"items": 12, "mapped": 7, "needs_scale": 3, "out_of_scope": 2}
                 for k in ("all", "study000", "study001", "study002", "study003", "study004")},
    # analysis/findings.py: the printed numbers and, per scale, what this testbed measured
    "findings": {
        "s000": {"maxtput_measured": "local: Kafka 1.95 MiB/s (1 run) and Pulsar 2.93 MiB/s (median of 3 runs, range "
                                     "1.95–3.91), ran with 16 partitions; aws: not measured at this scale",
                 "e2e_p99_measured": "local: not measured at this scale; aws: not measured at this scale"},
        "s001": {"printed": "73 %", "measured": "local: not measured at this scale; aws: not measured at this scale"},
        "s002": {"printed": "Kafka (flush) 1 p: 8.641 ms", "measured": "local: not measured at this scale; aws: not "
                                                                       "measured at this scale; ci: Kafka (flush) 1 p: "
                                                                       "6.00 ms (1 run) and Pulsar (flush) not run"},
        "s003": {"printed": "20 000 consumers: p99 0.68 s", "measured": "local: not measured at this scale; aws: not "
                                                                        "measured at this scale"},
        "s004": {"maxtput_printed": "Kafka 280 MB/s", "latency_printed": "Kafka 3.46 ms",
                 "maxtput_measured": "local: not measured at this scale; aws: not measured at this scale",
                 "latency_measured": "local: not measured at this scale; aws: not measured at this scale"},
        "faults": {k: "local: not measured at this scale; aws: not measured at this scale"
                   for k in ("runs", "F1", "F2", "F3", "F3h", "F4")},
    },
    "derived": {k: 1.5 for k in [
        "maxtput_100p_2prod_sync_kafka_ack_all_mibps", "maxtput_100p_2prod_sync_pulsar_ack_2_mibps",
        "maxtput_100p_2prod_bypass_pulsar_ack_1_mibps", "maxtput_1p_1prod_async_kafka_ack_1_mibps",
        "maxtput_1p_1prod_sync_kafka_ack_all_mibps",
        "e2e_p99_1sub_sync_pulsar_ack_2", "e2e_p99_1sub_sync_kafka_ack_all",
        "e2e_p99_1sub_async_pulsar_ack_2", "e2e_p99_1sub_async_kafka_ack_all",
        "e2e_p99_10sub_sync_kafka_ack_all", "e2e_p99_10sub_sync_pulsar_ack_2",
        "e2e_p99_10sub_async_kafka_ack_all", "e2e_p99_10sub_async_pulsar_ack_2",
        "catchup_peak_bypass_journal_pulsar_ack2_mmsgps", "catchup_peak_bypass_journal_kafka_ack2_mmsgps",
        "catchup_peak_nosync_pulsar_ack2_mmsgps", "catchup_peak_nosync_kafka_ack2_mmsgps",
        "maxtput_100p_2prod_async_pulsar_ack_2_mibps",
    ]},
}

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="480" height="240" viewBox="0 0 480 240">'
       '<rect width="480" height="240" fill="#ffffff"/><rect x="40" y="40" width="{w}" height="160" fill="#3b6ea5"/>'
       '<text x="50" y="30" font-family="sans-serif" font-size="16">{id}</text></svg>')


def make_paper(dest: Path) -> Path:
    """Copy the paper sources and systems/durability.yaml to dest/, then fake the analysis outputs."""
    paper = dest / "paper"
    paper.mkdir(parents=True)
    copy_sources(PAPER, paper)
    (dest / "systems").mkdir()
    shutil.copy(ROOT / "systems" / "durability.yaml", dest / "systems" / "durability.yaml")
    figs = paper / "figures"
    figs.mkdir()
    for n, fid in enumerate(FIGURE_IDS):
        (figs / f"{fid}.svg").write_text(SVG.format(id=fid, w=40 + 30 * n))
        (figs / f"{fid}.json").write_text(json.dumps({
            "id": fid, "caption": f"Fake figure {fid}: p99 [ms] of *series* <a & b>.",
            "alt": f'Bar chart "{fid}" with one bar.'}))
    tables = paper / "tables"
    tables.mkdir()
    for tid in TABLE_IDS:
        (tables / f"{tid}.md").write_text(f"| table | value |\n|---|---|\n| {tid} | 1.25 |\n")
        (tables / f"{tid}.csv").write_text(f"table,value\n{tid},1.25\n")
    (paper / "_variables.yml").write_text(yaml.safe_dump(FAKE_VARIABLES, sort_keys=False))
    return paper


@pytest.fixture
def fake_paper(tmp_path) -> Path:
    return make_paper(tmp_path)
