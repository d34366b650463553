"""Process rank, and `accelerate launch --cpu --num_processes N` made to start N processes.

accelerate 1.15 starts several CPU processes only through MPI (`--mpirun_hostfile`); without
it, `accelerate launch --cpu --num_processes 2 -m talentrl_cli sft` runs *one* process that
trains alone while the user believes it is data-parallel. Its simple launcher does export
`MASTER_ADDR`/`MASTER_PORT` (only when more than one process was asked for) and
`ACCELERATE_USE_CPU`, but not the process count, so the entry point recognises that case,
reads `--num_processes` from the launching command line, and re-executes itself under
torchrun (gloo on a CPU), which is what `accelerate launch --multi_gpu` does. Nothing else
here is hand-written: rendezvous, ranks and the gloo group are torch's and accelerate's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from talentrl_cli.errors import TalentRLError

# set by torchrun, or by the MPI runtimes accelerate reads ranks from
RANK_VARIABLES = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
WORKING_COMMAND = "accelerate launch --multi_gpu --num_processes N -m talentrl_cli ..."


def rank() -> int:
    """This process's rank in a data-parallel run (0 when there is none)."""
    return int(os.environ.get("RANK", "0"))


def is_main_process() -> bool:
    return rank() == 0


def single_process_cpu_launch(environ: os._Environ | dict[str, str] = os.environ) -> bool:
    """True inside `accelerate launch --cpu --num_processes N>1` without MPI: one process, no ranks."""
    return (str(environ.get("ACCELERATE_USE_CPU", "")).lower() == "true" and "MASTER_ADDR" in environ
            and not any(name in environ for name in RANK_VARIABLES))


def launcher_num_processes(cmdline: list[str]) -> int | None:
    """`--num_processes N` (or `=N`) from an `accelerate launch` command line, else None."""
    launcher = ("accelerate", "accelerate.commands.launch", "accelerate.commands.accelerate_cli")
    if not any(Path(arg).name in launcher or arg in launcher for arg in cmdline[:3]):
        return None
    for i, arg in enumerate(cmdline):
        value = arg.split("=", 1)[1] if arg.startswith("--num_processes=") else (
            cmdline[i + 1] if arg == "--num_processes" and i + 1 < len(cmdline) else None)
        if value is not None:
            return int(value) if value.isdigit() else None
    return None


def _parent_cmdline() -> list[str]:
    try:
        raw = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def relaunch_under_torchrun(argv: list[str]) -> None:
    """Replace this process with `torchrun --nproc_per_node N -m talentrl_cli ARGV` when it
    was started by `accelerate launch --cpu --num_processes N` (N > 1); otherwise return."""
    if not single_process_cpu_launch():
        return
    count = launcher_num_processes(_parent_cmdline())
    if count is None:
        raise TalentRLError(
            "started with MASTER_ADDR and ACCELERATE_USE_CPU but no rank variables, and the process "
            "count could not be read from the launcher: this would train in a single process",
            f"launch with `{WORKING_COMMAND}` (torchrun; gloo on a CPU-only machine)")
    if count <= 1:
        return
    print(f"talentrl: accelerate launch --cpu starts one process without MPI; re-launching "
          f"{count} processes under torchrun (gloo)", file=sys.stderr, flush=True)
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={count}",
               f"--master_addr={os.environ['MASTER_ADDR']}",
               f"--master_port={os.environ.get('MASTER_PORT', '29500')}", "-m", "talentrl_cli", *argv]
    os.execv(sys.executable, command)
