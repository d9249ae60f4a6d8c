#!/usr/bin/env bash
# A rank lost mid-collective: `run_fault_probe.sh MPIRUN PROBE NP MODE TRANSPORT EXPECTED_PASSES`.
# mpirun's default on a rank that dies is to kill the whole job at once; --enable-recovery keeps the
# others running so that they must find the loss themselves (the timeout path). Passes when exactly
# EXPECTED_PASSES ranks printed a PASS verdict (a DistError naming rank 1 within the timeout) and none
# printed FAIL.
set -uo pipefail
mpirun=$1 probe=$2 np=$3 mode=$4 transport=$5 expected=$6
here=$(dirname "$0")
output=$(bash "$here/mpirun.sh" "$mpirun" "$np" --enable-recovery -- "$probe" "$mode" "$transport" 2000 2>&1)
echo "$output"
passes=$(grep -c '^PASS' <<<"$output" || true)
fails=$(grep -c '^FAIL' <<<"$output" || true)
if [ "$passes" -ne "$expected" ] || [ "$fails" -ne 0 ]; then
  echo "run_fault_probe: $passes PASS and $fails FAIL verdicts, expected $expected PASS" >&2
  exit 1
fi
