# Snakemake rules of the testbeds stage (included by the root Snakefile before workloads/rules.smk).
# With testbed `lab` (`--profile lab`): lab up -> prepare -> probes per server host -> the benchmark matrix
# (workloads/rules.smk; its runs wait for TESTBED_READY and reach the hosts through `--inventory`) ->
# lab down once every run is done. With testbed `hosts` (`--profile hosts`, the user's own machines): the user's
# inventory adopted (checked, a working copy) -> prepare -> probes -> the matrix; nothing is torn down.
# On any other testbed nothing here runs and TESTBED_READY is empty. Paths below for the lab (data/runs/hosts/...
# for hosts):
#   data/runs/lab/testbed/inventory.json      the lab's inventory (a copy; removed by lab down)
#   data/runs/lab/testbed/prepared.json       hosts prepared (removed by lab down)
#   data/raw/lab/probes/<host>/*.json         probes per server host, each recording the inventory
#   data/runs/lab/testbed/down.json           the lab is down (the last step)
import json as _tb_json


TB_TESTBED = config["testbed"]
TB_LAB = config["testbeds"]["lab"]
TESTBED_READY = []          # every benchmark run waits for these (TESTBED_RUN_INPUTS below)
TESTBED_ON_ERROR = []       # workloads/rules.smk's onerror calls these after stopping the cluster
TESTBED_ON_SUCCESS = []     # and its onsuccess these: hosts that a target other than `all` left up

TB_HOSTS = config["testbeds"].get("hosts") or {}
if TB_TESTBED == "hosts" and not os.path.isfile(TB_HOSTS.get("inventory") or ""):
    print(f"config testbeds.hosts.inventory: {TB_HOSTS.get('inventory') or '(not set)'}: no such file: --profile hosts "
          "runs on the machines an inventory names (write one as docs/hosts.md shows; the profile reads my-hosts.json "
          "at the repository root)", file=sys.stderr)
    sys.exit(1)

if TB_TESTBED in ("lab", "hosts"):
    TB_DIR = f"data/runs/{TB_TESTBED}/testbed"
    TB_INVENTORY = f"{TB_DIR}/inventory.json"
    TB_PREPARED = f"{TB_DIR}/prepared.json"
    TB_PROBES = f"{TB_DIR}/probes.json"   # marker: the probes are in data/raw/lab/probes/<host>/
    TESTBED_READY = [TB_PROBES]  # the order of the issue: lab up -> prepare -> probes -> the matrix

    def TESTBED_RUN_INPUTS(run):  # the Snakefile's hook: what every benchmark run waits for (mtime ignored)
        return [ancient(p) for p in TESTBED_READY]

    def TESTBED_RUN_ARGS(run):  # the Snakefile's hook: workloads/run.py reaches the hosts through the inventory
        return f"--inventory {TB_INVENTORY}"

if TB_TESTBED == "lab":
    def _tb_lab_down():
        # the probes' marker too: the runs wait for it alone, so with it left behind the next workflow would skip
        # lab up and run against hosts that are gone (the probe results under data/raw/lab/probes stay)
        shell(f"python -m testbeds lab down --id {TB_LAB['id']} || true; rm -f {TB_INVENTORY} {TB_PREPARED} {TB_PROBES}")

    TESTBED_ON_ERROR.append(_tb_lab_down)

    def _tb_lab_down_if_up(clusters):
        # `all` took the lab down in testbed_lab_down (and removed the inventory); a narrower target (`faults`, one
        # experiment) did not: its cluster, namespaces, sshds and login user do not outlive the workflow either
        if os.path.exists(TB_INVENTORY):
            shell(f"python -m workloads.run --clusters {clusters} --down-all || true")
            _tb_lab_down()

    TESTBED_ON_SUCCESS.append(_tb_lab_down_if_up)

    rule testbed_lab_up:
        """The lab's namespaces, bridge and per-host sshd; its inventory."""
        output:
            TB_INVENTORY,
        log:
            f"logs/{TB_TESTBED}/testbed/lab-up.log",
        params:
            lab=TB_LAB,
            login="--login-user" if TB_LAB.get("login_user") else "",
        shell:
            "python -m testbeds lab up --id {params.lab[id]} --servers {params.lab[servers]}"
            " --clients {params.lab[clients]} --subnet {params.lab[subnet]} {params.login}"
            " --inventory-out {output} 2> {log}"

    rule testbed_lab_down:
        """The lab removed once every run is done and the probes are in."""
        input:
            runs=f"data/runs/{TB_TESTBED}/benchmarks.json",
            probes=TB_PROBES,
        output:
            f"{TB_DIR}/down.json",
        log:
            f"logs/{TB_TESTBED}/testbed/lab-down.log",
        params:
            lab=TB_LAB,
            inventory=TB_INVENTORY,
            prepared=TB_PREPARED,
        resources:
            cluster=1,
        shell:
            "python -m testbeds lab down --id {params.lab[id]} 2> {log}"
            " && rm -f {params.inventory} {params.prepared}"
            " && echo '{{\"down\": true}}' > {output}"

    ALL_TARGETS.append(f"{TB_DIR}/down.json")

if TB_TESTBED == "hosts":
    rule testbed_hosts_adopt:
        """The user's inventory checked (one line naming the file and the field when it is wrong) and kept as the
        working copy every later step reads; the machines stay as they are after the runs (nothing to tear down)."""
        input:
            TB_HOSTS["inventory"],
        output:
            TB_INVENTORY,
        log:
            f"logs/{TB_TESTBED}/testbed/adopt.log",
        shell:
            "python -m testbeds adopt --inventory {input} --out {output} 2> {log} || {{ cat {log} >&2; exit 1; }}"

if TB_TESTBED in ("lab", "hosts"):
    rule testbed_prepare:
        """Every host prepared with Ansible: directories, limits, JDK, distributions and runner shipped."""
        input:
            inventory=TB_INVENTORY,
            runner="runner/target/omb-runner.jar",
            dists=list(SYSTEMS_DIST_STAMP.values()),
        output:
            TB_PREPARED,
        log:
            f"logs/{TB_TESTBED}/testbed/prepare.log",
        shell:
            "python -m testbeds prepare --inventory {input.inventory} --log {log}.ansible 2> {log}"
            " && python -m testbeds ping --inventory {input.inventory} --log {log}.ansible 2>> {log}"
            " && cp {input.inventory} {output}"

    rule testbed_probes:
        """dd and fio on every server host's data directories (one host after another)."""
        input:
            ancient(TB_PREPARED),
        output:
            TB_PROBES,
        log:
            f"logs/{TB_TESTBED}/testbed/probes.log",
        params:
            out=f"data/raw/{TB_TESTBED}/probes",
            inventory=TB_INVENTORY,
            hw=lambda wc: _tb_json.dumps({"hw_probes": config["hw_probes"]}),
        resources:
            cluster=1,
        shell:
            "echo {params.hw:q} > {log}.config.json"
            " && python -m testbeds probes --inventory {params.inventory} --out {params.out}"
            " --config {log}.config.json 2> {log} && cp {params.inventory} {output}"

    ALL_TARGETS.append(TB_PROBES)


# the aws fleets' own cluster resources, which the runs of workloads/rules.smk (included next) hold
include: "aws/resources.smk"
