import os

import jupytext
import pytest
from nbclient import NotebookClient

from analysis.tests.paths import REPO


@pytest.mark.slow
def test_explore_notebook_runs_on_the_mirror(mirror, tmp_path, monkeypatch):
    nb = jupytext.read(REPO / "analysis" / "notebooks" / "explore_experiment.py")
    # an empty root with links to the code and reference files: the notebook must ingest the mirror itself
    root = tmp_path / "root"
    (root / "data" / "reference").mkdir(parents=True)
    (root / "data" / "reference" / "studies.csv").symlink_to(REPO / "data" / "reference" / "studies.csv")
    (root / "analysis").symlink_to(REPO / "analysis")
    (tmp_path / "shared" / "published").mkdir(parents=True)
    (tmp_path / "shared" / "published" / "streamnative-2020").symlink_to(mirror)
    monkeypatch.setenv("STREAMBENCH_ROOT", str(root))
    monkeypatch.setenv("ANALYSIS_EXPERIMENT", "E000-LAT2")
    monkeypatch.setenv("PYTHONPATH", str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(root)}}).execute()
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outs) + "".join(str(o.get("data", {}).get("text/plain", "")) for o in outs)
    assert "matches within rounding" in text and "kafka-ack-all" in text
