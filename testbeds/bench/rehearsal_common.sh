# Shared by the rehearsal benches (rehearsal_interrupt.sh, rehearsal_sshd_stop.sh); sourced, not run. Sets `fail`,
# defines `bad`, `leftovers` and `archived_summary_ok`, and starts from the repository root with no aws data but a
# rehearsal's (a real aws run's data stop the bench in one line, exit 2).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
fail=0
bad() { echo "FAIL: $*"; fail=1; }
leftovers() { # what of the rehearsal (lab rh, its emulator) is still there, as words; empty when nothing is
  local what=""
  [ -z "$(ip netns list | grep '^sbl-rh-')" ] || what+=" namespaces"
  [ -z "$(losetup -a | grep '/lab/rh/disks/')" ] || what+=" loop-devices"
  ! getent passwd sblrh >/dev/null || what+=" login-user"
  ! pgrep -f "moto.server" >/dev/null || what+=" moto"
  ! pgrep -f "[k]afka[.]Kafka|[o]rg[.]apache[.]pulsar|[o]rg[.]apache[.]bookkeeper" >/dev/null || what+=" brokers"
  echo "$what"
}
archived_summary_ok() { # the newest archived rehearsal's summary passes workloads.summary --check
  local summary
  summary=$(ls -t data/rehearsal/*/data/runs/aws/benchmarks.json 2>/dev/null | head -n 1)
  if [ -n "$summary" ]; then python -m workloads.summary --check "$summary" || bad "summary check of $summary"
  else bad "no archived summary"; fi
}
if [ -e data/runs/aws ] && [ ! -f data/runs/aws/rehearsal.json ]; then
  echo "$(basename "$0" .sh): data/runs/aws is a real aws run's: move it away first"; exit 2
fi
rm -rf data/runs/aws data/raw/aws logs/aws
