# Snakemake rules of the hw-probes stage (included by the root Snakefile).
# Probes: data/raw/<testbed>/probes/<host>/{host,dd-<dir>,dd-fdatasync-<dir>,fio-seqwrite-<dir>,fio-fsync-<dir>}.json
# Each probe rule holds the `cluster` resource, so a probe never overlaps a benchmark run or another probe.
import os as _hwp_os
import re as _hwp_re
import yaml as _hwp_yaml

with open(_hwp_os.path.join(str(workflow.current_basedir), "config.schema.yaml")) as _f:
    _HWP_DEFAULTS = {k: v.get("default") for k, v in _hwp_yaml.safe_load(_f)["properties"].items()}
HWP = {**_HWP_DEFAULTS, **config.get("hw_probes", {})}
HWP_TESTBED = config.get("testbed", "local")
HWP_DIR = f"data/raw/{HWP_TESTBED}/probes/{HWP['host']}"
HWP_LOG = f"logs/{HWP_TESTBED}/hw-probes/{HWP['host']}"
HWP_CMD = "python -m hwprobe"


def _hwp_dir(wildcards):
    return HWP["dirs"][wildcards.dirlabel]


# One list of every probe file, for ALL_TARGETS and for analysis rules that read the probes.
HW_PROBE_FILES = [f"{HWP_DIR}/host.json"] + [
    f"{HWP_DIR}/{probe}-{label}.json"
    for label in HWP["dirs"]
    for probe in ("dd", "dd-fdatasync", "fio-seqwrite", "fio-fsync")
]
ALL_TARGETS.extend(HW_PROBE_FILES)

wildcard_constraints:
    dirlabel="|".join(_hwp_re.escape(k) for k in HWP["dirs"]),


rule hw_probe_host:
    output: f"{HWP_DIR}/host.json"
    log: f"{HWP_LOG}/host.log"
    params:
        cmd=HWP_CMD,
        hwp=HWP,
        dir=lambda wc: next(iter(HWP["dirs"].values()))
    shell: "mkdir -p {params.dir} && {params.cmd} host --dir {params.dir} --host {params.hwp[host]} --out {output} 2> {log}"


rule hw_probe_dd:
    output: f"{HWP_DIR}/dd-{{dirlabel}}.json"
    log: f"{HWP_LOG}/dd-{{dirlabel}}.log"
    params:
        cmd=HWP_CMD,
        hwp=HWP,
        dir=_hwp_dir
    resources: cluster=1
    shell:
        "{params.cmd} dd --dir {params.dir} --create --host {params.hwp[host]} --size-mb {params.hwp[dd_size_mb]}"
        " --bs-kb {params.hwp[dd_bs_kb]} --timeout-s {params.hwp[timeout_s]} --out {output} 2> {log}"


rule hw_probe_dd_fdatasync:
    output: f"{HWP_DIR}/dd-fdatasync-{{dirlabel}}.json"
    log: f"{HWP_LOG}/dd-fdatasync-{{dirlabel}}.log"
    params:
        cmd=HWP_CMD,
        hwp=HWP,
        dir=_hwp_dir
    resources: cluster=1
    shell:
        "{params.cmd} dd --fdatasync --dir {params.dir} --create --host {params.hwp[host]} --size-mb {params.hwp[dd_size_mb]}"
        " --bs-kb {params.hwp[dd_bs_kb]} --timeout-s {params.hwp[timeout_s]} --out {output} 2> {log}"


rule hw_probe_fio_seqwrite:
    output: f"{HWP_DIR}/fio-seqwrite-{{dirlabel}}.json"
    log: f"{HWP_LOG}/fio-seqwrite-{{dirlabel}}.log"
    params:
        cmd=HWP_CMD,
        hwp=HWP,
        dir=_hwp_dir
    resources: cluster=1
    shell:
        "{params.cmd} fio-seq --dir {params.dir} --create --host {params.hwp[host]} --size-mb {params.hwp[fio_size_mb]}"
        " --bs {params.hwp[fio_bs]} --runtime-s {params.hwp[fio_runtime_s]} --timeout-s {params.hwp[timeout_s]} --out {output} 2> {log}"


rule hw_probe_fio_fsync:
    output: f"{HWP_DIR}/fio-fsync-{{dirlabel}}.json"
    log: f"{HWP_LOG}/fio-fsync-{{dirlabel}}.log"
    params:
        cmd=HWP_CMD,
        hwp=HWP,
        dir=_hwp_dir
    resources: cluster=1
    shell:
        "{params.cmd} fio-fsync --dir {params.dir} --create --host {params.hwp[host]} --size-mb {params.hwp[fio_fsync_size_mb]}"
        " --bs {params.hwp[fio_fsync_bs]} --runtime-s {params.hwp[fio_runtime_s]} --timeout-s {params.hwp[timeout_s]} --out {output} 2> {log}"
