# The aws testbed's cluster resources (included by testbeds/rules.smk, before workloads/rules.smk defines the runs
# that hold them). On one machine every run holds the one `cluster`: one cluster at a time. The aws fleets run side
# by side (testbeds/aws/rules.smk), so a run holds its own fleet's `cluster_<fleet>` instead, each limited to 1
# (unless --resources sets it): every fleet still runs one cluster at a time, and no fleet waits for another's
# runs. Which fleet a run is on is looked up when the DAG is built (AWS_FLEET_OF, testbeds/aws/rules.smk).
if config["testbed"] == "aws":
    from testbeds.aws import plan as _aws_res_plan

    try:
        AWS_FLEET_NAMES = sorted(_aws_res_plan.load_fleets(config["aws"]["instances_file"])[0])
    except _aws_res_plan.AwsError as _aws_res_error:
        print(f"aws: {_aws_res_error}", file=sys.stderr)
        sys.exit(1)

    def aws_cluster_resource(fleet):
        return f"cluster_{fleet}"

    def _aws_holds(fleet):
        return lambda wildcards: int(AWS_FLEET_OF.get(_wl_run(wildcards).key) == fleet)

    TESTBED_RUN_RESOURCES = {aws_cluster_resource(_f): _aws_holds(_f) for _f in AWS_FLEET_NAMES}
    for _f in AWS_FLEET_NAMES:
        if aws_cluster_resource(_f) not in workflow.global_resources:
            workflow.register_resource(aws_cluster_resource(_f), 1)
