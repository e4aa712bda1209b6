#!/bin/bash
# The AWS rehearsal with one server host's sshd stopped mid-run, then run again (issue 30, "the same command with one
# host's sshd stopped mid-run ... leaves nothing behind, and a rerun completes"). About 25 min on the 2-core
# development machine (measured: docs/measurements.yaml aws-rehearsal-sshd-stop).
#   env/shell bash testbeds/bench/rehearsal_sshd_stop.sh [HOST]     (HOST: an inventory host name, default s000-server-2)
# 1. starts `python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all`; 20 s
#    after the first run job of HOST's fleet began, every sshd process of the lab host bound to HOST is killed (its
#    listener and its sessions: the controller's connections drop and new ones are refused, as when a machine's
#    sshd dies; the brokers on it go on); 2. the call must end by itself, with nothing left (namespace, loop device,
#    the lab's login user, a JVM, moto); 3. a run recorded failed must name HOST; 4. the same command again (after
#    `workloads.run --forget-failed` when the first call kept its data, as a user retries failed runs): exit 0,
#    nothing left, and every run of its summary ok (workloads.summary --check). Exit 0 only if all of that holds; each
#    failed check is one line. Refuses to start over existing aws data (it removes only a rehearsal's).
. "$(dirname "$0")/rehearsal_common.sh"
HOST=${1:-s000-server-2}
FLEET=${HOST%%-*}
log1=$(mktemp) log2=$(mktemp)
t0=$(date +%s)
setsid python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all >"$log1" 2>&1 &
W=$!
# the first run job of HOST's fleet (its jobs hold the fleet's own cluster resource, cluster_<fleet>=1)
began() { awk -v f="cluster_${FLEET}=1" '/^(local)?rule /{r=$2} /^ *resources:/ && index($0, f) && r ~ /^(benchmark_run|fault_run):/{n++} END{exit !n}' "$log1"; }
until began; do
  sleep 2
  if ! kill -0 "$W" 2>/dev/null || [ $(( $(date +%s) - t0 )) -gt 1500 ]; then bad "no run job of $FLEET began"; break; fi
done
sleep 20
# the lab host bound to HOST (testbeds/aws/rehearsal.py bindings.json), and its namespace (the lab's state.json)
ns=$(python - "$HOST" <<'PY'
import json, sys
from testbeds import lab
d = lab.lab_dir("rh")
bound = [n for n, b in json.loads((d / "bindings.json").read_text()).items() if b["host"] == sys.argv[1]]
hosts = {h["name"]: h for h in json.loads((d / "state.json").read_text())["hosts"]}
print(hosts[bound[0]]["netns"] if bound else "")
PY
)
if [ -z "$ns" ]; then
  bad "no lab host is bound to $HOST"
else
  pids=$(for p in $(ip netns pids "$ns"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = sshd ] && echo "$p"; done)
  echo "sshd of $HOST ($ns) stopped at $(( $(date +%s) - t0 )) s: pids $(echo $pids)"
  [ -n "$pids" ] && kill -KILL $pids
fi
wait "$W"; rc=$?
echo "first call: exit $rc after $(( $(date +%s) - t0 )) s"; grep "^rehearse:" "$log1" | tail -n 3
left=$(leftovers); [ -z "$left" ] || bad "left after the first call:$left"
# the first call's data: kept (a failure) or archived (the workflow ended 0 with failed runs recorded)
if [ -f data/runs/aws/rehearsal.json ]; then status=data/runs/aws/status; else
  status=$(ls -td data/rehearsal/*/data/runs/aws/status 2>/dev/null | head -n 1); fi
named=$(python - "$status" "$HOST" <<'PY'
import json, pathlib, sys
failed = [json.loads(p.read_text()) for p in pathlib.Path(sys.argv[1]).rglob("*.json")]
failed = [r for r in failed if r.get("status") == "failed"]
for r in failed:
    print(f"  failed: {r.get('run')}: {r.get('reason')}: {(r.get('error') or '').splitlines()[:1]}", file=sys.stderr)
print(sum(sys.argv[2] in (r.get("error") or "") for r in failed))
PY
)
[ "${named:-0}" -ge 1 ] || bad "no failed run names $HOST"
if [ -f data/runs/aws/rehearsal.json ]; then
  python -m workloads.run --forget-failed data/runs/aws/status || bad "workloads.run --forget-failed failed"
fi
t1=$(date +%s)
python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all >"$log2" 2>&1; rc=$?
echo "second call: exit $rc after $(( $(date +%s) - t1 )) s"; grep "^rehearse:" "$log2" | tail -n 4
[ "$rc" -eq 0 ] || bad "the second call exited $rc (log $log2)"
left=$(leftovers); [ -z "$left" ] || bad "left after the second call:$left"
archived_summary_ok
[ "$fail" -eq 0 ] && echo "PASS: $HOST's sshd stopped mid-run, nothing left, the rerun completed" && rm -f "$log1" "$log2"
exit "$fail"
