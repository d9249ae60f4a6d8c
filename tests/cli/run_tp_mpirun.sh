#!/usr/bin/env bash
# Tensor parallelism over processes (G7): `mpirun -np 2 lemma logits|generate --tensor-parallel-size 2`
# prints what one process prints (logits within the f32 tolerance, the same greedy ids and text), from
# rank 0 only; a rank count that differs from --tensor-parallel-size is a clear error.
# Usage: run_tp_mpirun.sh MPIRUN LEMMA SHARED_DATA_DIR ($LEMMA_SHARED/data when set). Exit 77 (skip) without stories260K, unless CI=true.
set -uo pipefail
mpirun=$1 lemma=$2 data=$3
[ -n "${LEMMA_SHARED:-}" ] && data=$LEMMA_SHARED/data  # as the C++ tests: $LEMMA_SHARED over ../shared
here=$(dirname "$0")
mpi() { bash "$here/../unit/dist/mpirun.sh" "$mpirun" "$@"; }
fail() { echo "run_tp_mpirun: $*" >&2; exit 1; }
model=$data/models/stories260K/stories260K.gguf
if [ ! -f "$model" ]; then
  [ "${CI:-}" = true ] && fail "missing shared test data: $model"
  echo "skipped: missing $model"; exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ids=1,403,407,261,378,432,383,286,261,376,298,315,421,395,317
"$lemma" logits --model "$model" --ids $ids >"$tmp/one" || fail "one process failed"
mpi 2 -- "$lemma" logits --model "$model" --ids $ids --tensor-parallel-size 2 >"$tmp/two" || fail "mpirun -np 2 logits failed"
/usr/bin/python3 - "$tmp/one" "$tmp/two" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])  # one JSON document each: only rank 0 printed
assert len(a) == len(b) == 15, (len(a), len(b))
largest = max(abs(x) for row in a for x in row)
worst = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
assert worst <= 1e-4 * largest + 1e-5, f"max |diff| {worst} (max |logit| {largest})"
print(f"logits: max |diff| {worst:.3g} of max |logit| {largest:.3g}")
PY

args=(generate --model "$model" --json --temperature 0 --max-tokens 40 --threads 1 --prompt "Once upon a time")
"$lemma" "${args[@]}" >"$tmp/one" || fail "one process generate failed"
mpi 2 -- "$lemma" "${args[@]}" --tensor-parallel-size 2 >"$tmp/two" || fail "mpirun -np 2 generate failed"
/usr/bin/python3 - "$tmp/one" "$tmp/two" <<'PY' || exit 1
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["ids"] == b["ids"] and a["text"] == b["text"], (a["ids"], b["ids"])
assert len(a["ids"]) == 40
print("generate: the same 40 greedy ids and text")
PY

err=$(mpi 2 -- "$lemma" logits --model "$model" --ids 1,2 2>&1) && fail "exit 0 with -np 2 and --tensor-parallel-size 1"
grep -q "under mpirun -np 2" <<<"$err" || fail "no clear error in: $err"
echo ok
