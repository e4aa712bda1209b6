# Snakemake rules of the AWS testbed (included by the root Snakefile after workloads/rules.smk; active only when
# config testbed is aws). One fleet per study (testbeds/aws/instances.yaml), one after another:
#
#   aws_up      data/runs/aws/fleets/<fleet>/inventory.json     provision (testbeds/aws/up.yml) -> the inventory;
#                                                               each host's EC2 facts in data/raw/aws/probes/<host>/aws-instance.json
#   aws_probes  data/raw/aws/probes/<fleet>.json                dd + fio on every server's data dirs (the lab's multi-host probes)
#   benchmark_run (workloads/rules.smk)                          each run of the fleet's study, on its hosts (--inventory)
#   aws_down    data/runs/aws/fleets/<fleet>/down.json          tear the fleet down once its runs are done; the next
#                                                               fleet's aws_up waits for it
#   then benchmarks -> analysis -> paper, as on every testbed; onsuccess and onerror tear down whatever still
#   carries the run's tag (python -m testbeds.aws down), so does `snakemake --profile aws teardown`.
#
# Nothing is created before the onstart gate: it prints the instance-hours and the on-demand cost of the planned
# jobs and refuses unless aws.confirm is true, the credentials resolve, and the multi-host parts exist.
if config["testbed"] == "aws":
    import importlib.util as _aws_importlib
    import sys as _aws_sys

    from testbeds.aws import plan as _aws_plan
    from testbeds.aws import provision as _aws_prov

    AWS = config["aws"]
    try:
        _AWS_BY_FLEET, _AWS_ROWS, _AWS_PRICES = _aws_plan.plan_from_config(config, runs=WL_RUNS)
    except _aws_plan.AwsError as _aws_error:
        print(f"aws: {_aws_error}", file=_aws_sys.stderr)
        _aws_sys.exit(1)
    # the run id: config, else data/runs/aws/run-id, else a new one (written by the onstart gate of a real run)
    AWS_RUN_ID = _aws_prov.run_id(AWS, create=False)
    AWS_FLEETS = sorted(_AWS_BY_FLEET)
    AWS_FLEET_OF = {r.key: f for f, runs in _AWS_BY_FLEET.items() for r in runs}
    AWS_DIR = "data/runs/aws/fleets"
    AWS_LOGS = f"logs/aws/{AWS_RUN_ID}"

    def _aws_inventory(fleet):
        return f"{AWS_DIR}/{fleet}/inventory.json"

    # each run needs its fleet's inventory and passes it to the multi-host runner
    def TESTBED_RUN_INPUTS(run):
        return [_aws_inventory(AWS_FLEET_OF[run.key])]

    def TESTBED_RUN_ARGS(run):
        return f"--inventory {_aws_inventory(AWS_FLEET_OF[run.key])}"

    # probes run on the fleets' servers, not on the controller: the hw-probes stage's local probe files are
    # replaced (in place: analysis/rules.smk reads the list) by one summary per fleet
    for _f in HW_PROBE_FILES:
        ALL_TARGETS.remove(_f)
    HW_PROBE_FILES[:] = [f"data/raw/aws/probes/{f}.json" for f in AWS_FLEETS]
    ALL_TARGETS.extend(HW_PROBE_FILES)
    ALL_TARGETS.extend(f"{AWS_DIR}/{f}/down.json" for f in AWS_FLEETS)

    wildcard_constraints:
        fleet="s[0-9]{3}",

    rule aws_up:
        """Provision one fleet (VPC, subnet, security group, key pair, instances) and write its inventory."""
        input:
            instances=AWS["instances_file"],
            prices=AWS["prices_file"],
            # fleets run one after another: the previous one is down before the next is created
            previous=lambda wc: [f"{AWS_DIR}/{AWS_FLEETS[AWS_FLEETS.index(wc.fleet) - 1]}/down.json"]
            if AWS_FLEETS.index(wc.fleet) > 0 else [],
        output:
            temp(f"{AWS_DIR}/{{fleet}}/inventory.json"),
        log:
            f"{AWS_LOGS}/up-{{fleet}}.log",
        params:
            run=AWS_RUN_ID,
            facts="data/raw/aws/probes",
        shell:
            "python -m testbeds.aws up --fleet {wildcards.fleet} --run-id {params.run} --inventory {output}"
            " --facts-dir {params.facts} --log {log}"

    rule aws_probes:
        """dd and fio on every server host's data directories (the lab's multi-host probes, testbeds.probes)."""
        input:
            inventory=f"{AWS_DIR}/{{fleet}}/inventory.json",
        output:
            "data/raw/aws/probes/{fleet}.json",
        log:
            f"{AWS_LOGS}/probes-{{fleet}}.log",
        resources:
            cluster=1,
        shell:
            "python -m testbeds.probes --inventory {input.inventory} --out-dir data/raw/aws/probes"
            " --summary {output} > {log} 2>&1"

    rule aws_down:
        """Tear one fleet down once its runs are done (recorded, ok or failed) and its servers probed."""
        input:
            inventory=f"{AWS_DIR}/{{fleet}}/inventory.json",
            probes="data/raw/aws/probes/{fleet}.json",
            runs=lambda wc: [f"{WL_RUNS_DIR}/status/{r.key}.json" for r in _AWS_BY_FLEET[wc.fleet]],
        output:
            f"{AWS_DIR}/{{fleet}}/down.json",
        log:
            f"{AWS_LOGS}/down-{{fleet}}.log",
        params:
            run=AWS_RUN_ID,
        shell:
            "python -m testbeds.aws down --run-id {params.run} --fleet {wildcards.fleet} --log {log}"
            " && printf '{{\"run\": \"%s\", \"fleet\": \"%s\", \"down\": \"%s\"}}\\n' {params.run} {wildcards.fleet}"
            " \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\" > {output}"

    rule teardown:
        """`snakemake --profile aws teardown`: remove everything tagged with the run id (safe to re-run)."""
        params:
            run=AWS_RUN_ID,
        shell:
            "python -m testbeds.aws down --run-id {params.run}"

    def _aws_gate():
        """onstart: refuse before anything is created unless the estimate is confirmed and everything resolves."""
        jobs = list(workflow.dag.needrun_jobs())
        if not any(j.rule.name == "aws_up" for j in jobs):
            return  # nothing will be created (e.g. `teardown`, or analysis of runs already collected)
        planned = [WL_BY_KEY[f"{j.wildcards.system}/{j.wildcards.leveldir}/{j.wildcards.workload}/rep-{j.wildcards.rep}"]
                   for j in jobs if j.rule.name == "benchmark_run"]
        try:
            fleets, est = _aws_plan.load_fleets(AWS["instances_file"])
            prices = _aws_plan.load_prices(AWS["prices_file"], AWS["region"])
            doc = _wl_plan.load(WL_FILE)
            rows = _aws_plan.estimate(_aws_plan.assign(planned, doc, fleets, AWS["instances_file"]), fleets, est,
                                      prices, AWS["prices_file"])
            print(_aws_plan.format_estimate(rows, prices), file=_aws_sys.stderr)
            _aws_plan.check_lifetime(rows, AWS)
            _aws_plan.check_confirm(AWS)
            _aws_plan.check_credentials(AWS["region"])
            missing = [m for m in ("testbeds.inventory", "testbeds.probes") if _aws_importlib.find_spec(m) is None]
            if "--inventory" not in Path("workloads/run.py").read_text():
                missing.append("workloads.run --inventory")
            if missing:
                raise _aws_plan.AwsError(
                    "testbed aws: the multi-host parts of the lab testbed (issue 12) are missing: "
                    + ", ".join(missing) + "; nothing was created")
        except _aws_plan.AwsError as exc:
            raise WorkflowError(f"aws: {exc}")
        if not AWS.get("run_id") and not _aws_prov.RUN_ID_FILE.exists():
            _aws_prov.RUN_ID_FILE.parent.mkdir(parents=True, exist_ok=True)
            _aws_prov.RUN_ID_FILE.write_text(AWS_RUN_ID + "\n")

    def _aws_teardown(why):
        shell(f"python -m testbeds.aws down --run-id {AWS_RUN_ID} || echo 'aws: teardown after {why} failed;"
              f" run: python -m testbeds.aws down --run-id {AWS_RUN_ID}' >&2")

    onsuccess:
        _aws_teardown("success")

    # Snakemake keeps one onerror handler: chain the one defined before (workloads: stop the clusters)
    _aws_onerror_before = workflow._onerror

    onerror:
        _aws_onerror_before(log)
        _aws_teardown("an error")
