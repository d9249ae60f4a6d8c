#!/usr/bin/env bash
# Runs a test program under mpirun on this one host: `mpirun.sh MPIRUN NP [mpirun flags...] -- PROGRAM ARGS`.
# --oversubscribe: more ranks than cores (CI has 2). btl self,vader: on one host messages go through
# shared memory; the TCP transport would also probe every network interface of a container (and
# print connect() failures for unreachable ones). As root OpenMPI refuses to start without
# --allow-run-as-root.
set -euo pipefail
mpirun=$1 np=$2
shift 2
flags=()
while [ "$1" != "--" ]; do flags+=("$1"); shift; done
shift
[ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
exec "$mpirun" --oversubscribe -np "$np" --mca btl self,vader "${flags[@]}" "$@"
