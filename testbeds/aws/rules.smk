# Snakemake rules of the AWS testbed (included by the root Snakefile after workloads/rules.smk; active only when
# config testbed is aws). One fleet per study (testbeds/aws/instances.yaml), the fleets side by side:
#
#   aws_up      data/runs/aws/fleets/<fleet>/inventory.json     provision (testbeds/aws/up.yml) -> the inventory;
#                                                               each host's EC2 facts in data/raw/aws/probes/<host>/aws-instance.json
#   aws_prepare data/runs/aws/fleets/<fleet>/prepared.json      every host prepared with Ansible (testbeds prepare + ping)
#   aws_probes  data/raw/aws/probes/<fleet>.json                dd + fio on every server's data dirs (testbeds probes)
#   benchmark_run (workloads/rules.smk)                          each run of the fleet's study, on its hosts (--inventory),
#                                                               holding cluster_<fleet> (testbeds/aws/resources.smk): one
#                                                               cluster at a time per fleet, in data/runs/aws/fleets/<fleet>/clusters
#   aws_down    data/runs/aws/fleets/<fleet>/down.json          tear the fleet down once its runs are done
#   then benchmarks -> analysis -> paper, as on every testbed; onsuccess and onerror tear down whatever still
#   carries the run's tag (python -m testbeds.aws down), so does `snakemake --profile aws teardown`. Every
#   teardown writes data/runs/aws/fleets/<fleet>/torn-down.json for each fleet not done yet; aws_up takes it as
#   an input, so a rerun after an error provisions that fleet anew (its recorded runs are not redone).
#
# Which fleets are up at once (testbeds/aws/plan.py pack): all of them, unless aws.parallel_fleets, the account's
# vCPU quota (aws.vcpu_quota, else Service Quotas when credentials resolve) or the region's room for the fleets' VPCs
# and internet gateways holds fewer; then a fleet's aws_up also waits for the down.json of the fleets it must follow
# (AWS_PACKING.after). aws.parallel_fleets: 1 is one fleet after another in name order.
#
# A fleet's own failure stays its own: aws_up, aws_prepare and aws_probes run through `python -m testbeds.aws step`,
# which on a failure tears that fleet down alone, records data/runs/aws/fleets/<fleet>/failed.json and writes a
# failed stub as the step's output; the fleet's later steps are skipped, its runs recorded failed (reason testbed),
# its aws_down marks it down, and the other fleets go on (the profile keeps going past any other failed job too).
#
# Nothing is created before the onstart gate: it prints the instance-hours, the on-demand cost and the wall time of
# the planned jobs and refuses unless aws.confirm is true, the credentials resolve and the fleets planned at once
# fit the account's vCPU quota and the region's VPCs.
if config["testbed"] == "aws":
    import json as _aws_json
    import shlex as _aws_shlex
    import sys as _aws_sys

    from testbeds.aws import plan as _aws_plan
    from testbeds.aws import provision as _aws_prov

    AWS = config["aws"]
    # the rehearsal (profile aws-rehearsal) needs its lab and emulator: outside the wrapper, one line saying how
    if AWS.get("rehearsal") is not None and not (os.environ.get("STREAMBENCH_REHEARSAL_LAB")
                                                 or os.environ.get("STREAMBENCH_REHEARSAL_PRESTAGE")):
        print("aws: aws.rehearsal is set: run it as `env/shell python -m testbeds.aws --profile aws-rehearsal rehearse"
              " -- snakemake --profile aws-rehearsal all` (the wrapper makes the lab and the emulator)", file=_aws_sys.stderr)
        _aws_sys.exit(1)
    try:
        _AWS_BY_FLEET, _AWS_ROWS, _AWS_PRICES = _aws_plan.plan_from_config(config, runs=WL_RUNS)
    except _aws_plan.AwsError as _aws_error:
        print(f"aws: {_aws_error}", file=_aws_sys.stderr)
        _aws_sys.exit(1)
    # the run id: config, else data/runs/aws/run-id, else a new one (written by the onstart gate of a real run)
    AWS_RUN_ID = _aws_prov.run_id(AWS, create=False)
    # which fleets run at once: within aws.parallel_fleets, the account's vCPU quota and the region's room for the
    # fleets' VPCs, as far as they are known now (read with the credentials, when they resolve)
    try:
        AWS_PACKING = _aws_plan.packing_from_config(
            AWS, _AWS_ROWS, _aws_plan.planning_limits(AWS, AWS_RUN_ID, query=workflow.is_main_process))
    except _aws_plan.AwsError as _aws_error:
        print(f"aws: {_aws_error}", file=_aws_sys.stderr)
        _aws_sys.exit(1)
    if workflow.is_main_process and AWS_PACKING.note():
        print(f"aws: {AWS_PACKING.note()}", file=_aws_sys.stderr)
    AWS_FLEETS = sorted(_AWS_BY_FLEET)
    AWS_FLEET_OF = {r.key: f for f, runs in _AWS_BY_FLEET.items() for r in runs}
    # the fault grid's runs that `all` does not hold (the `faults` target: E000-FAULT and E000-FAULTHOLD) go to
    # their study's fleet as well; the onstart gate estimates whatever the DAG plans, and teardown at the end (onsuccess)
    # takes that fleet down, since no down.json of the `all` target waits for them
    try:
        _aws_fleets, _ = _aws_plan.load_fleets(AWS["instances_file"])
        for _f, _runs in _aws_plan.assign([r for r in WL_FAULT_RUNS if r.key not in AWS_FLEET_OF],
                                          _WL_DOC, _aws_fleets, AWS["instances_file"]).items():
            AWS_FLEET_OF.update({r.key: _f for r in _runs})
            if _f not in AWS_FLEETS:
                AWS_FLEETS.append(_f)
    except _aws_plan.AwsError as _aws_error:
        print(f"aws: {_aws_error}", file=_aws_sys.stderr)
        _aws_sys.exit(1)
    AWS_DIR = "data/runs/aws/fleets"
    AWS_LOGS = f"logs/aws/{AWS_RUN_ID}"

    # per fleet, the systems its runs start (of `all` and of `faults`): the distributions its prepare ships
    AWS_FLEET_SYSTEMS = {f: sorted({WL_BY_KEY[k].system for k, kf in AWS_FLEET_OF.items() if kf == f}) for f in AWS_FLEETS}

    def _aws_inventory(fleet):
        return f"{AWS_DIR}/{fleet}/inventory.json"

    def _aws_prepared(fleet):
        return f"{AWS_DIR}/{fleet}/prepared.json"

    # each run waits for its fleet's hosts to be prepared and probed, and reaches them through its inventory
    # (workloads/run.py --inventory: clusters on the servers, runners on the clients). Ancient: when a torn-down
    # fleet is brought up again (aws_up below), the runs it already recorded are not redone.
    def _aws_fleet_of(run):
        """The fleet a run is planned on (every run of `all` and of `faults` has one, by its study)."""
        return AWS_FLEET_OF[run.key]

    def TESTBED_RUN_INPUTS(run):
        fleet = _aws_fleet_of(run)
        return [ancient(p) for p in (_aws_inventory(fleet), _aws_prepared(fleet), f"data/raw/aws/probes/{fleet}.json")]

    def TESTBED_RUN_ARGS(run):
        return f"--inventory {_aws_inventory(_aws_fleet_of(run))}"

    def TESTBED_CLUSTERS_DIR(run):  # each fleet keeps its own running cluster (workloads/run.py's current.json)
        return f"{AWS_DIR}/{_aws_fleet_of(run)}/clusters"

    def _aws_step(step, output, log):
        """`python -m testbeds.aws step ... -- COMMAND`: a failure tears down this fleet alone (see the top)."""
        return (f"python -m testbeds.aws step --fleet {{wildcards.fleet}} --step {step} --run-id {AWS_RUN_ID}"
                f" --output {output} --log {log} -- {{params.cmd:q}}")

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
            # the fleets this one follows (their vCPUs must be free first): none when all run at once; the one
            # before it with aws.parallel_fleets 1
            previous=lambda wc: [f"{AWS_DIR}/{f}/down.json" for f in AWS_PACKING.after.get(wc.fleet, ())],
            # written by every teardown (onerror, `teardown`, `python -m testbeds.aws down`) while the fleet is
            # not done: newer than the inventory, so a rerun provisions the fleet anew instead of using dead hosts
            torn_down=lambda wc: _aws_prov.aws_up_inputs(wc.fleet, AWS_DIR),
        output:
            temp(f"{AWS_DIR}/{{fleet}}/inventory.json"),
        log:
            f"{AWS_LOGS}/up-{{fleet}}.log",
        params:
            cmd=lambda wc: f"python -m testbeds.aws up --fleet {wc.fleet} --run-id {AWS_RUN_ID}"
            f" --inventory {_aws_inventory(wc.fleet)} --facts-dir data/raw/aws/probes --log {AWS_LOGS}/up-{wc.fleet}.log",
        shell:
            _aws_step("up", "{output}", "{log}")

    rule aws_prepare:
        """Every host of one fleet prepared with Ansible: directories, limits, JDK, distributions, runner."""
        input:
            inventory=f"{AWS_DIR}/{{fleet}}/inventory.json",
            runner="runner/target/omb-runner.jar",
            # only the distributions the fleet's runs start: its servers get nothing they never run
            dists=lambda wc: [SYSTEMS_DIST_STAMP[s] for s in AWS_FLEET_SYSTEMS[wc.fleet]],
        output:
            f"{AWS_DIR}/{{fleet}}/prepared.json",
        log:
            f"{AWS_LOGS}/prepare-{{fleet}}.log",
        params:
            cmd=lambda wc: (lambda inv, log: f"python -m testbeds prepare --inventory {inv}"
                            f" --systems {','.join(AWS_FLEET_SYSTEMS[wc.fleet])} --log {log}.ansible 2> {log}"
                            f" && python -m testbeds ping --inventory {inv} --log {log}.ansible 2>> {log}"
                            f" && cp {inv} {_aws_prepared(wc.fleet)}")(_aws_inventory(wc.fleet),
                                                                       f"{AWS_LOGS}/prepare-{wc.fleet}.log"),
        shell:
            _aws_step("prepare", "{output}", "{log}")

    rule aws_probes:
        """dd and fio on every server host's data directories (testbeds probes, one host after another)."""
        input:
            inventory=f"{AWS_DIR}/{{fleet}}/inventory.json",
            prepared=f"{AWS_DIR}/{{fleet}}/prepared.json",
        output:
            "data/raw/aws/probes/{fleet}.json",
        log:
            f"{AWS_LOGS}/probes-{{fleet}}.log",
        params:
            cmd=lambda wc: (lambda log: f"echo {_aws_shlex.quote(_aws_json.dumps({'hw_probes': config['hw_probes']}))}"
                            f" > {log}.config.json && python -m testbeds probes --inventory {_aws_inventory(wc.fleet)}"
                            f" --out data/raw/aws/probes --config {log}.config.json"
                            f" --summary data/raw/aws/probes/{wc.fleet}.json 2> {log}")(f"{AWS_LOGS}/probes-{wc.fleet}.log"),
        resources:
            # the fleet's cluster resource: its servers are probed while none of its clusters runs
            **{aws_cluster_resource(_f): (lambda wc, _f=_f: int(wc.fleet == _f)) for _f in AWS_FLEET_NAMES},
        shell:
            _aws_step("probes", "{output}", "{log}")

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
            # the wall time of what is left to run, packed as the DAG packs the fleets
            packing = _aws_plan.pack(rows, AWS.get("parallel_fleets"), AWS_PACKING.quota, AWS_PACKING.quota_source,
                                     AWS_PACKING.room, AWS_PACKING.room_source)
            print(_aws_plan.format_estimate(rows, prices, AWS, packing), file=_aws_sys.stderr)
            _aws_plan.check_lifetime(rows, AWS)
            if AWS.get("vcpu_quota") is not None:  # no credentials needed
                _aws_plan.check_packing(AWS_PACKING, *_aws_plan.vcpu_quota(AWS), rows)
            _aws_plan.check_confirm(AWS)
            session = _aws_plan.check_credentials(AWS["region"])
            # the fleets the DAG brings up at once (AWS_PACKING) against the account's quota and the region's VPCs,
            # read now
            _aws_plan.check_packing(AWS_PACKING, *_aws_plan.vcpu_quota(AWS, session), rows)
            _aws_plan.check_room(AWS_PACKING, *_aws_plan.network_room(AWS, session, AWS_RUN_ID))
        except _aws_plan.AwsError as exc:
            raise WorkflowError(f"aws: {exc}")
        if not AWS.get("run_id") and not _aws_prov.RUN_ID_FILE.exists():
            _aws_prov.RUN_ID_FILE.parent.mkdir(parents=True, exist_ok=True)
            _aws_prov.RUN_ID_FILE.write_text(f"{AWS_RUN_ID}\n")

    def _aws_teardown(why):
        if os.environ.get("STREAMBENCH_REHEARSAL_PRESTAGE"):
            return  # the rehearsal's first call (distributions and runner, testbeds/aws/rehearsal.py) made nothing
        shell(f"python -m testbeds.aws down --run-id {AWS_RUN_ID} || echo 'aws: teardown after {why} failed;"
              f" run: python -m testbeds.aws down --run-id {AWS_RUN_ID}' >&2")

    onsuccess:
        _aws_teardown("success")

    # Snakemake keeps one onerror handler: chain the one defined before (workloads: stop the clusters)
    _aws_onerror_before = workflow._onerror

    onerror:
        _aws_onerror_before(log)
        _aws_teardown("an error")
