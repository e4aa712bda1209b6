# Snakemake rules of the paper stage (included by the root Snakefile).
# rule paper: every figure/table/variables file of the analysis stage -> paper/_build/paper.{html,pdf}
import importlib.util as _paper_ilu
import os as _paper_os
import yaml as _paper_yaml

_paper_dir = str(workflow.current_basedir)
_spec = _paper_ilu.spec_from_file_location("paper_ids", _paper_os.path.join(_paper_dir, "ids.py"))
_paper_ids = _paper_ilu.module_from_spec(_spec)
_spec.loader.exec_module(_paper_ids)
PAPER_FIGURE_IDS = _paper_ids.FIGURE_IDS  # the one list (paper/ids.py)
PAPER_TABLE_IDS = _paper_ids.TABLE_IDS

with open(_paper_os.path.join(_paper_dir, "config.schema.yaml")) as _f:
    _PAPER_DEFAULTS = {k: v.get("default") for k, v in _paper_yaml.safe_load(_f)["properties"].items()}
PAPER = {**_PAPER_DEFAULTS, **config.get("paper", {})}

PAPER_OUTPUTS = ["paper/_build/paper.html", "paper/_build/paper.pdf"]
ALL_TARGETS.extend(PAPER_OUTPUTS)


rule paper:
    input:
        figures=[f"paper/figures/{i}.{ext}" for i in PAPER_FIGURE_IDS for ext in ("svg", "json")],
        tables=[f"paper/tables/{t}.md" for t in PAPER_TABLE_IDS],
        variables="paper/_variables.yml",
        durability="systems/durability.yaml",
        sources=["paper/paper.qmd", "paper/_quarto.yml", "paper/style.css", "paper/render.py", "paper/ids.py",
                 *sorted(f"paper/sections/{f}" for f in _paper_os.listdir(_paper_os.path.join(_paper_dir, "sections"))
                         if f.endswith(".qmd"))],
    output:
        html=PAPER_OUTPUTS[0],
        pdf=PAPER_OUTPUTS[1],
    log: "logs/paper/render.log"
    params: renderer=PAPER["renderer"]
    shell: "python -m paper.render --paper paper --renderer {params.renderer} 2> {log}"
