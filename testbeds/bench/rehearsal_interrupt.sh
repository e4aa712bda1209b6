#!/bin/bash
# The AWS rehearsal interrupted during a cluster start, then resumed (issue 30, "Ctrl-C during a cluster start leaves
# nothing behind, and a rerun completes"). Takes about 25 min on the 2-core development machine.
#   env/shell bash testbeds/bench/rehearsal_interrupt.sh
# 1. starts `python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all` in a
#    session of its own; SIGINT to its process group (as Ctrl-C) 15 s after the first run job began, while clusters
#    start; 2. checks that nothing is left (namespace, loop device, the lab's login user, a JVM, moto) and that the
#    run's data were kept; 3. the same command again: it must resume and end 0; 4. nothing left, and every run of the
#    archived summary ok (workloads.summary --check). Exit 0 only if all of that holds; each failed check is one line.
# Refuses to start over existing aws data (it removes only a rehearsal's: data/runs/aws/rehearsal.json).
. "$(dirname "$0")/rehearsal_common.sh"
log1=$(mktemp) log2=$(mktemp)
t0=$(date +%s)
setsid python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all >"$log1" 2>&1 &
W=$!
until grep -qE "^(localrule|rule) (benchmark_run|fault_run)" "$log1"; do
  sleep 2
  if ! kill -0 "$W" 2>/dev/null || [ $(( $(date +%s) - t0 )) -gt 1200 ]; then bad "no run job began"; break; fi
done
sleep 15
echo "interrupt at $(( $(date +%s) - t0 )) s; clusters: $(cat data/runs/aws/fleets/*/clusters/current.json 2>/dev/null | tr -d '\n' | cut -c1-200)"
kill -INT -- "-$W"
wait "$W"; rc=$?
echo "first call: exit $rc after $(( $(date +%s) - t0 )) s"; grep "^rehearse:" "$log1" | tail -n 3
[ "$rc" -ne 0 ] || bad "the interrupted call exited 0"
left=$(leftovers); [ -z "$left" ] || bad "left after the interrupt:$left"
[ -f data/runs/aws/rehearsal.json ] || bad "the interrupted rehearsal's data were not kept"
t1=$(date +%s)
python -m testbeds.aws --profile aws-rehearsal rehearse -- snakemake --profile aws-rehearsal all >"$log2" 2>&1; rc=$?
echo "second call: exit $rc after $(( $(date +%s) - t1 )) s"; grep "^rehearse:" "$log2" | tail -n 4
grep -q "^rehearse: resuming" "$log2" || bad "the second call did not resume"
[ "$rc" -eq 0 ] || bad "the resumed call exited $rc (log $log2)"
left=$(leftovers); [ -z "$left" ] || bad "left after the resume:$left"
archived_summary_ok
[ "$fail" -eq 0 ] && echo "PASS: interrupted during a cluster start, nothing left, resumed to the end" && rm -f "$log1" "$log2"
exit "$fail"
