"""python -m testbeds.aws {estimate,up,down,leftovers}: the AWS testbed's command line.

  estimate [--profile aws] [--markdown]     instance-hours, on-demand cost and wall time of the planned runs, one
                                            fleet after another and as many at once as aws.parallel_fleets and
                                            aws.vcpu_quota allow (nothing created)
  up --fleet s000 --inventory PATH          bring one fleet up (checks, confirm gate, up.yml) and write its inventory
  step --fleet s000 --step up|prepare|probes --output PATH -- COMMAND
                                            run one step of a fleet; if it fails, tear that fleet down alone, record
                                            failed.json and write a failed stub to PATH (the workflow goes on)
  down [--run-id ID] [--fleet s000]         remove everything tagged with the run (safe to re-run)
  leftovers [--run-id ID]                   list what still carries the run's tag
  rehearse -- COMMAND...                    (profile aws-rehearsal) run COMMAND as the controller of an EC2-like lab
                                            behind moto's server, then tear down and check that nothing is left
                                            (testbeds/aws/rehearsal.py)

The config is the Snakemake config of the profile (env/config.yaml + env/profiles/<profile>/config.yaml,
checked and filled in by env/configcheck.py), or the checked config a Snakemake job hands down.
Every error is one line naming the file or the key; exit status 1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

from testbeds.aws import plan, provision
from testbeds.aws.plan import ROOT, AwsError


def load_config(profile: str, sets: list[str]) -> dict:
    """The checked config of a profile, with KEY=YAML settings (dotted keys) merged into it."""
    from env import configcheck

    if configcheck.HANDOVER in os.environ and not sets and profile == "aws":
        return json.loads(os.environ[configcheck.HANDOVER])
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        label, data = configcheck.overrides(["snakemake", "--profile", profile], {})
        data = json.loads(json.dumps(data or {}))
        for item in sets:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise AwsError(f"--set {item}: not KEY=VALUE")
            node = data
            *parents, last = key.split(".")
            for p in parents:
                node = node.setdefault(p, {})
            node[last] = yaml.safe_load(value)
        if sets:
            label = f"{label} + --set"
        return configcheck.check(("env/config.yaml", configcheck.load_yaml(configcheck.BASE_CONFIG)), (label, data))
    except configcheck.ConfigError as exc:
        raise AwsError(str(exc)) from None
    finally:
        os.chdir(cwd)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbeds.aws", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="aws", help="Snakemake profile whose config is used (default aws)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config value (dotted key, YAML value) merged into the profile's, e.g. aws.confirm=true")
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("estimate")
    e.add_argument("--markdown", action="store_true", help="the README's table")
    u = sub.add_parser("up")
    u.add_argument("--fleet", required=True)
    u.add_argument("--inventory", required=True, type=Path)
    u.add_argument("--facts-dir", type=Path, help="writes <dir>/<host>/aws-instance.json (beside the probes)")
    u.add_argument("--log", type=Path, default=None)
    u.add_argument("--run-id")
    u.add_argument("--fail-after", help=argparse.SUPPRESS)  # tests: up.yml fails after this step (e.g. subnet)
    st = sub.add_parser("step")
    st.add_argument("--fleet", required=True)
    st.add_argument("--step", required=True, choices=["up", "prepare", "probes"])
    st.add_argument("--output", required=True, type=Path)
    st.add_argument("--run-id")
    st.add_argument("--log", type=Path, default=None, help="the step's log (its last line names a failure) and the"
                    " teardown's")
    st.add_argument("command", nargs=argparse.REMAINDER, help="-- then the shell command of the step")
    rh = sub.add_parser("rehearse")
    rh.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command (e.g. snakemake --profile aws-rehearsal all)")
    for name in ("down", "leftovers"):
        d = sub.add_parser(name)
        d.add_argument("--run-id", help="default: config aws.run_id, else data/runs/aws/run-id")
        d.add_argument("--fleet")
        d.add_argument("--region", help="default: config aws.region")
        d.add_argument("--log", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        config = load_config(args.profile, args.set)
        aws = config["aws"]
        if args.cmd == "estimate":
            _, rows, prices = plan.plan_from_config(config)
            packing = plan.packing_from_config(aws, rows)  # aws.vcpu_quota when set; the API is asked only by a run
            print(plan.markdown_table(rows, prices, packing) if args.markdown
                  else plan.format_estimate(rows, prices, aws, packing))
            return 0
        if args.cmd == "step":
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            if not command:
                raise AwsError("step: no command after --")
            rid = args.run_id or provision.run_id(aws, create=False)
            return provision.fleet_step(config, args.fleet, rid, args.step, args.output, " ".join(command), args.log)
        if args.cmd == "rehearse":
            from testbeds.aws import rehearsal
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            if not command:
                raise AwsError("rehearse: no command after --")
            return rehearsal.rehearse(aws, command, say=lambda m: print(m, file=sys.stderr, flush=True))
        if args.cmd == "up":
            rid = args.run_id or provision.run_id(aws, create=True)
            log = args.log or ROOT / "logs" / "aws" / rid / f"up-{args.fleet}.log"
            inv = provision.up(config, args.fleet, rid, args.inventory, log, facts_dir=args.facts_dir,
                               fail_after=args.fail_after)
            print(f"aws: fleet {args.fleet} of run {rid} is up: {len(inv['hosts'])} hosts, inventory {args.inventory}",
                  file=sys.stderr)
            return 0
        if args.region:
            aws = dict(aws, region=args.region)
        rid = args.run_id or provision.run_id(aws, create=False)
        if not args.run_id and not aws.get("run_id") and not provision.RUN_ID_FILE.is_file():
            raise AwsError(f"{provision.RUN_ID_FILE.relative_to(ROOT)}: not found and no --run-id given: no run to tear down")
        if args.cmd == "leftovers":
            left = provision.leftovers(plan.check_credentials(aws["region"]), rid, args.fleet,
                                      provision.uses_placement(aws))
            for kind, ids in left.items():
                print(f"{kind}: {', '.join(ids)}")
            return 1 if left else 0
        log = args.log or ROOT / "logs" / "aws" / rid / "down.log"
        removed = provision.down(aws, rid, log, fleet=args.fleet)
        what = "; ".join(f"{len(v)} {k}" for k, v in removed.items()) or "nothing was left"
        print(f"aws: run {rid}{' fleet ' + args.fleet if args.fleet else ''} torn down ({what})", file=sys.stderr)
        return 0
    except AwsError as exc:
        print(f"aws: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
