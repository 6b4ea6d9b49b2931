#!/bin/sh
# examples/dist_host under mpirun with 4 ranks (two halves of 2, each training over its
# own communicator passed as a Fortran handle): the halves must train the same policy.
# As root, oversubscribed, as tests/test_dist.sh sets OpenMPI up.
#
#   run_dist_host.sh DIST_HOST
set -u
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun not found (scripts/setup.sh installs openmpi-bin)"
    exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/dist_host.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
out=$(mpirun -np 4 "$1" "$dir" 2>&1)
rc=$?
echo "$out"
case $out in
    *"the two halves trained the same policies"*) ;;
    *) echo "FAIL: no agreement line"; exit 1 ;;
esac
[ -s "$dir/half0.frl" ] && [ -s "$dir/half1.frl" ] || { echo "FAIL: a policy is missing"; exit 1; }
exit $rc
