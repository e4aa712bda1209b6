"""Shared by the plan tests: the level catalogue of durability.yaml written out (so a test fails when a level
appears or goes), and a copy of experiments.yaml with one change."""
import yaml

from workloads import plan

CATALOG = plan.Catalog(
    levels={"kafka": ("L1", "L2", "L3", "L4"), "pulsar": ("L1", "L2", "L3", "L4", "L2-bypass", "L4-bypass"),
            "pravega": ("L1", "L2", "L3", "L4")},
    tunings=("stock", "tuned"),
)


def doc_with(tmp_path, mutate):
    doc = yaml.safe_load(plan.EXPERIMENTS.read_text())
    mutate(doc)
    p = tmp_path / "experiments.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p
