#!/usr/bin/env bash
# Throughput of a scaled-out job (riffle run --group) with 1, 2 and 4 processes on the embedded
# store, against the plain in-process run of the same job (docs/scale-out.md).
#
#   benches/scale_out.sh [RIFFLE] [ORDERS] [PROCESSES...]
#
# The job: orders (4 queues) joined with customers (2 queues), totals per region and per
# customer into two upsert topics; checkpoints every second. Prints, per setting, the wall
# time until every process exited and the CPU seconds (user + sys) of all processes, and for
# the group runs the job-wide checkpoints completed and their latency (from the coordinator's
# start to its completion, in the coordination topic's store timestamps). JOB_CHECKPOINT_INTERVAL
# sets 'riffle.job-checkpoint.interval' (default: the job's default, 5 s; '1 d' for none).
set -euo pipefail
RIFFLE=${1:-target/debug/riffle}
ORDERS=${2:-100000}
shift $(( $# > 2 ? 2 : $# ))
PROCESSES=("${@:-1 2 4}")
RIFFLE=$(realpath "$RIFFLE")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

job() {
  cat <<SQL
SET 'execution.checkpointing.interval' = '1 s';
${JOB_CHECKPOINT_INTERVAL:+SET 'riffle.job-checkpoint.interval' = '$JOB_CHECKPOINT_INTERVAL';}
SET 'parallelism.default' = '4';
CREATE TABLE orders (order_id BIGINT, customer STRING, amount BIGINT) WITH (
  'connector' = 'rocketmq', 'rocketmq.source.topic' = 'orders',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE customers (customer STRING, region STRING) WITH (
  'connector' = 'rocketmq', 'rocketmq.source.topic' = 'customers',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE regions (region STRING, orders BIGINT, total BIGINT, PRIMARY KEY (region) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '$1_regions', 'format' = 'json');
CREATE TABLE per_customer (customer STRING, region STRING, total BIGINT, biggest BIGINT,
  PRIMARY KEY (customer) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '$1_customers', 'format' = 'json');
CREATE TEMPORARY VIEW enriched AS
SELECT o.order_id, o.customer, o.amount, c.region
FROM orders AS o JOIN customers AS c ON o.customer = c.customer;
EXECUTE STATEMENT SET BEGIN
INSERT INTO regions SELECT region, COUNT(*), SUM(amount) FROM enriched GROUP BY region;
INSERT INTO per_customer SELECT customer, region, SUM(amount), MAX(amount)
  FROM enriched GROUP BY customer, region;
END;
SQL
}

seq 0 $((ORDERS - 1)) | awk '{printf "{\"order_id\":%d,\"customer\":\"c%d\",\"amount\":%d}\n", $1, ($1*7)%3000, ($1*31)%1000}' > orders.jsonl
seq 0 2999 | awk '{printf "{\"customer\":\"c%d\",\"region\":\"r%d\"}\n", $1, $1%9}' > customers.jsonl
"$RIFFLE" topic create orders --queues 4 >/dev/null
"$RIFFLE" topic create customers --queues 2 >/dev/null
"$RIFFLE" topic produce orders --key-field order_id --file orders.jsonl >/dev/null
"$RIFFLE" topic produce customers --key-field customer --file customers.jsonl >/dev/null

measure() { # name, command...
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  local times
  times=$( { TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>>"$WORK/stderr.log"; } 2>&1 )
  end=$(date +%s.%N)
  local wall cpu
  wall=$(echo "$end - $start" | bc)
  cpu=$(echo "$times" | tail -1 | awk '{print $1 + $2}')
  printf '%-28s wall %7.1f s  cpu %7.1f s  %8.0f rows/s (wall)\n' "$name" "$wall" "$cpu" \
    "$(echo "$ORDERS / $wall" | bc -l)"
}

job plain > plain.sql
measure "plain run (in-process)" "$RIFFLE" run plain.sql --job-id plain
for n in ${PROCESSES[@]}; do
  job "g$n" > "g$n.sql"
  group_run() {
    for _ in $(seq 1 "$n"); do
      "$RIFFLE" run "g$n.sql" --job-id "g$n" --group g &
    done
    wait
  }
  measure "--group, $n process(es)" group_run
  # Job checkpoints: started and completed (jc-start / jc-done) with their store timestamps.
  "$RIFFLE" topic consume "g$n--coord" --from earliest --format json | awk '
    /"RIFFLE_COORD":"jc-(start|done)"/ {
      match($0, /"RIFFLE_COORD":"jc-[a-z]+"/); kind = substr($0, RSTART + 19, RLENGTH - 20)
      match($0, /"RIFFLE_JC":"[0-9]+"/); n = substr($0, RSTART + 13, RLENGTH - 14)
      match($0, /"store_timestamp":[0-9]+/); t = substr($0, RSTART + 18, RLENGTH - 18)
      if (kind == "start") start[n] = t; else if (!(n in done)) done[n] = t
    }
    END {
      count = 0; sum = 0; max = 0
      for (n in done) if (n in start) { d = done[n] - start[n]; count++; sum += d; if (d > max) max = d }
      if (count > 0) printf "%-28s %d job checkpoints, latency mean %.0f ms, max %d ms\n", "", count, sum / count, max
      else printf "%-28s no job checkpoint completed\n", ""
    }'
done
"$RIFFLE" topic list
