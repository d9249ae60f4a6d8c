#!/usr/bin/env bash
# `lemma bench collectives`: without mpirun it refuses with a message saying how to run it; under
# `mpirun -np 2` rank 0 prints one JSON object with a row per op x transport x size, each timed.
# Usage: run_bench_collectives.sh MPIRUN LEMMA
set -uo pipefail
mpirun=$1 lemma=$2
here=$(dirname "$0")
fail() { echo "run_bench_collectives: $*" >&2; exit 1; }

alone=$("$lemma" bench collectives 2>&1) && fail "exit 0 without mpirun"
grep -q "mpirun -np 2 lemma bench collectives" <<<"$alone" || fail "no hint in: $alone"

json=$(bash "$here/mpirun.sh" "$mpirun" 2 -- "$lemma" bench collectives --sizes 64 5000 --json) || fail "mpirun failed"
/usr/bin/python3 - "$json" <<'PY' || exit 1
import json, sys
report = json.loads(sys.argv[1])
rows = report["rows"]
assert report["ranks"] == 2, report["ranks"]
seen = {(r["op"], r["transport"], r["bytes"]) for r in rows}
want = {(op, via, b) for op in ("all_reduce", "all_gather", "broadcast") for via in ("shm", "mpi") for b in (64, 5000)}
assert seen == want, f"rows {sorted(seen)} != {sorted(want)}"
for r in rows:
    assert r["avg_us"] > 0 and r["p50_us"] > 0 and r["algbw_gbps"] > 0, r
print(f"{len(rows)} rows, all timed")
PY
