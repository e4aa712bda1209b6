#!/usr/bin/env bash
# Recording cost per message of the runner's bookkeeping (payload copy + audit header on send, three publish
# histograms on ack, header parse + two e2e histograms + audit on receive): CPU ns per message, median of rounds,
# and the criterion (median <= 1 µs of CPU per message, 1 and 2 threads): exits 1 when either fails. Usage: runner/bench/recording_cost.sh [rounds] [msgsPerRound]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ -f "$HERE/target/omb-runner.jar" ]] || { echo "runner not built: run mvn -q -f runner/pom.xml package" >&2; exit 2; }
rc=0
for threads in 1 2; do
  java -Xmx1g -cp "$HERE/target/omb-runner.jar:$HERE/target/lib/*" org.streambench.runner.bench.RecordingCost "${1:-7}" "${2:-2000000}" "$threads" || rc=1
done
echo "verdict: $([ "$rc" = 0 ] && echo PASS || echo FAIL) (1 and 2 threads)"
exit "$rc"
