"""Distributed training from Python (doc/distributed.md): a script run under mpirun with
dist.mode=ddppo trains on every rank, and the ranks agree on the run (the same env
steps, episodes and mean return, and the same parameters: both ranks save their policy
and the files are the same bytes). Skipped, with the reason, without mpirun or the MPI
plugin (sanitizer builds have none)."""

import os
import shutil
import subprocess
import sys

import pytest

import fastrl

SCRIPT = r"""
import os, sys
import fastrl
rank = os.environ["OMPI_COMM_WORLD_RANK"]
t = fastrl.Trainer("CartPole-v1", config={"dist.mode": "ddppo", "train.num_envs": 4,
                                          "runtime.threads": 1})
m = t.train(16384)
t.policy.save(os.path.join(sys.argv[1], "policy%s.frl" % rank))
# A file per rank: mpirun forwards the ranks' stdout in chunks that need not end at a
# newline, so two ranks' lines can share one line of the captured output.
with open(os.path.join(sys.argv[1], "rank%s.txt" % rank), "w") as f:
    f.write("steps %d episodes %d return %.6f" % (m.env_steps, m.episodes, m.mean_return))
"""

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def _mpi_or_skip():
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not found (scripts/setup.sh installs openmpi-bin)")
    plugin = os.path.join(os.path.dirname(fastrl.library_path()), "libfastrl-mpi.so.0")
    if not os.path.exists(plugin):
        pytest.skip(f"no MPI plugin in this build ({plugin} is missing)")


@pytest.mark.slow
def test_two_ranks_agree(tmp_path):
    _mpi_or_skip()
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, **MPI_ENV, "FASTRL_LIBRARY": fastrl.library_path(),
           "PYTHONPATH": os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")]))}
    cmd = ["mpirun", "-np", "2", "-x", "FASTRL_LIBRARY", "-x", "PYTHONPATH", sys.executable,
           "-c", SCRIPT, str(tmp_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [(tmp_path / f"rank{r}.txt").read_text().split() for r in (0, 1)]
    assert lines[0] == lines[1], lines
    assert int(lines[0][1]) == 16384  # both ranks' steps: 2 x 4 envs x 128 x 16
    a = (tmp_path / "policy0.frl").read_bytes()
    b = (tmp_path / "policy1.frl").read_bytes()
    assert a == b
