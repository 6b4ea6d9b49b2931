#!/bin/sh
# What dist.mode=ddppo checks between ranks that differ, under mpirun with 2 ranks (as
# tests/test_dist.sh sets OpenMPI up; SKIP, saying why, without MPI):
# - ranks on different envs are refused at start, on every rank, naming both envs;
# - ranks resumed from different checkpoints are refused after loading, on every rank,
#   naming the rank whose checkpoint differs;
# - blocks of different sizes are refused naming the sizes (not accepted short, nor
#   "MPI_ERR_IN_STATUS"); a rank of another library version is named by its version;
# - a rank late to the trainer's creation: the failed creation leaves no memory for the
#   late rank's duplication to write into, and dist.on_fault=abort ends the job;
# - after a fault a rank that writes no checkpoint still refuses frl_trainer_save, with
#   the message in the trainer's buffer;
# - runtimes seeded by rank (the settings check sees the trainer's settings, not the
#   runtime's) are refused at the creation, on every rank, naming both seeds;
# - a dist.comm that names no communicator is refused with the reason, on every rank;
# - a save from another thread mid-update is refused on every rank, rank 1 (which writes
#   nothing) as rank 0;
# - a host that finalises MPI before destroying its trainer: the destroy makes no MPI
#   call (one would end the process);
# - the plugin's timeout message in a decimal-comma host locale says "0.5 s", as the
#   setting is typed (the check says why when this machine cannot make de_DE.UTF-8).
#
#   test_dist_checks.sh FASTRL DIST_PROBE MPI_PLUGIN PLUGIN_BUILT
set -u
fastrl=$1 probe=$2 plugin=$3
if [ "$4" != 1 ]; then
    echo "SKIP: the MPI plugin is not in this build (meson: 'mpi plugin')"
    exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun not found (scripts/setup.sh installs openmpi-bin)"
    exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_dist_checks.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_helpers.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

# ---- ranks on different envs ----
dd="--steps 4096 --quiet --set dist.mode=ddppo --set train.num_envs=4"
run mpirun -np 1 "$fastrl" train CartPole-v1 $dd : -np 1 "$fastrl" train Acrobot-v1 $dd
refused "different envs" "rank 1 trains on Acrobot-v1, rank 0 on CartPole-v1"
[ "$(printf '%s\n' "$out" | grep -c 'rank 1 trains on Acrobot-v1')" -ge 2 ] ||
    fail "different envs: not said on both ranks: $out"

# ---- ranks given different budgets ----
# Refused at the train call on both ranks, before any update: the rank with the smaller
# budget once finished (saying so) while the other waited out dist.timeout, and until
# then their learning rates annealed over different update counts.
budget="--quiet --set dist.mode=ddppo --set train.num_envs=4 --set dist.timeout=30"
run timeout 25 mpirun -np 1 "$fastrl" train CartPole-v1 --steps 4096 $budget : \
    -np 1 "$fastrl" train CartPole-v1 --steps 8192 $budget
refused "different budgets" "rank 1's is 8192 env steps, rank 0's 4096"
[ "$(printf '%s\n' "$out" | grep -c "rank 1's is 8192")" -ge 2 ] ||
    fail "different budgets: not said on both ranks: $out"
! has "mean_return" || fail "different budgets: a rank trained: $out"

# ---- ranks resumed from different checkpoints ----
run mpirun -np 2 "$fastrl" train CartPole-v1 $dd --seed 1 --out "$dir/a"
ok "the run both resume"
cp -r "$dir/a" "$dir/b"
run mpirun -np 1 "$fastrl" train --resume "$dir/b" --steps 8192 --quiet
ok "b trained on"
more="--steps 16384 --quiet --set train.num_envs=4"
run mpirun -np 1 "$fastrl" train --resume "$dir/a" $more : \
    -np 1 "$fastrl" train --resume "$dir/b" $more
refused "different checkpoints" "rank 1 resumed from another checkpoint than rank 0"
[ "$(printf '%s\n' "$out" | grep -c 'rank 1 resumed from another')" -ge 2 ] ||
    fail "different checkpoints: not said on both ranks: $out"
cp -r "$dir/a" "$dir/c"
run mpirun -np 1 "$fastrl" train --resume "$dir/a" $more : \
    -np 1 "$fastrl" train --resume "$dir/c" $more
ok "copies of one checkpoint"

# ---- the probes ----
probe() { # MODE: $out gets the job's output (the job ends with MPI_Abort)
    out=$(FRL_MPI_PLUGIN="$plugin" timeout 60 mpirun -np 2 "$probe" "$1" 2>&1)
}
probe sizes
has "PROBE rank 0: status -14: rank 0 of 2: rank 1 sent 8 bytes where this rank expected 16" ||
    fail "sizes, rank 0: $out"
has "PROBE rank 1: status -14: rank 1 of 2: rank 0 sent more than the 8 bytes this rank" ||
    fail "sizes, rank 1: $out"
probe version
has "PROBE rank 0: status -16: frl_trainer_create: rank 1 runs libfastrl 0.0.1, rank 0" ||
    fail "version: $out"
probe late
has "PROBE rank 0: creation status -13: frl_trainer_create: MPI: not every rank" ||
    fail "late: rank 0's creation: $out"
has "PROBE rank 0: 0 blocks changed after rank 1's late creation" || fail "late: $out"
probe late_abort
has "MPI_Abort ends the job (dist.on_fault=abort)" || fail "late_abort: no abort: $out"
has "PROBE rank 0: creation status" && fail "late_abort: rank 0's creation returned: $out"
probe save_fault
has "PROBE rank 1: save status -10 (FRL_ERR_STATE); the trainer's message: an exchange" ||
    fail "save after a fault on rank 1: $out"
probe seeds
has "PROBE rank 0: seeds: status -2: frl_trainer_create: rank 1's seed is 7, rank 0's 3" ||
    fail "seeds, rank 0: $out"
has "PROBE rank 1: seeds: status -2: frl_trainer_create: rank 1's seed is 7, rank 0's 3" ||
    fail "seeds, rank 1: $out"
probe bad_comm
for r in 0 1; do
    has "PROBE rank $r: bad_comm: status -13: frl_trainer_create: MPI: dist.comm=1000 is not" ||
        fail "bad_comm, rank $r: $out"
done
probe save_running
for r in 0 1; do
    has "PROBE rank $r: save while training: status -10 (FRL_ERR_STATE)" ||
        fail "save_running, rank $r: $out"
done
probe finalized
for r in 0 1; do
    has "PROBE rank $r: destroyed after MPI_Finalize" || fail "finalized, rank $r: $out"
done

# A decimal-comma locale for the ranks: the system's, or one made in $dir (LOCPATH).
comma_locale() {
    [ "$(LC_ALL=de_DE.UTF-8 locale decimal_point 2>/dev/null)" = "," ] && return 0
    command -v localedef >/dev/null 2>&1 || return 1
    localedef -i de_DE -f UTF-8 "$dir/de_DE.UTF-8" >/dev/null 2>&1 || return 1
    export LOCPATH="$dir"
}
if comma_locale; then
    probe comma
    has "PROBE rank 1: comma: locale de_DE.UTF-8, decimal point ','" ||
        fail "comma: the probe is not in the comma locale: $out"
    has "PROBE rank 1: comma: train status -14: rank 1 of 2: no answer from rank 0" ||
        fail "comma: no fault: $out"
    has "within 0.5 s (dist.timeout)" || fail "comma: the timeout is not written 0.5 s: $out"
else
    echo "note: the comma-locale check did not run: no de_DE.UTF-8 and localedef cannot make it"
fi

echo "$failures failures"
[ "$failures" -eq 0 ]
