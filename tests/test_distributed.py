"""`accelerate launch --cpu --num_processes N` detection, and rank-0-only tracking."""

from __future__ import annotations

import pytest

from talentrl_cli import distributed


@pytest.mark.parametrize("cmdline, expected", [
    (["/v/bin/python", "/v/bin/accelerate", "launch", "--cpu", "--num_processes", "2", "-m", "x"], 2),
    (["/v/bin/python", "/v/bin/accelerate", "launch", "--num_processes=4", "--cpu", "-m", "x"], 4),
    (["python", "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "3", "s.py"], 3),
    (["/v/bin/python", "/v/bin/accelerate", "launch", "--cpu", "-m", "x"], None),
    (["/v/bin/python", "train.py", "--num_processes", "2"], None),  # not accelerate
    (["/v/bin/python", "/v/bin/accelerate", "launch", "--num_processes", "two"], None),
])
def test_num_processes_is_read_from_the_accelerate_command_line(cmdline, expected):
    assert distributed.launcher_num_processes(cmdline) == expected


def test_single_process_cpu_launch_is_recognised_only_without_rank_variables():
    launched = {"ACCELERATE_USE_CPU": "True", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    assert distributed.single_process_cpu_launch(launched)
    assert not distributed.single_process_cpu_launch({**launched, "WORLD_SIZE": "2"})  # torchrun child
    assert not distributed.single_process_cpu_launch({**launched, "OMPI_COMM_WORLD_SIZE": "2"})  # mpirun
    assert not distributed.single_process_cpu_launch({"ACCELERATE_USE_CPU": "True"})  # --num_processes 1
    assert not distributed.single_process_cpu_launch({})


def test_relaunch_without_a_readable_count_is_a_clear_error(monkeypatch):
    from talentrl_cli.errors import TalentRLError

    for name, value in {"ACCELERATE_USE_CPU": "True", "MASTER_ADDR": "127.0.0.1"}.items():
        monkeypatch.setenv(name, value)
    for name in distributed.RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(distributed, "_parent_cmdline", lambda: ["bash"])
    with pytest.raises(TalentRLError, match="single process") as err:
        distributed.relaunch_under_torchrun(["sft"])
    assert "--multi_gpu" in err.value.hint


def test_only_rank_zero_opens_a_wandb_run(monkeypatch, tmp_path):
    from talentrl_cli.tracking import Tracker, track

    monkeypatch.setenv("RANK", "1")
    with track({"mode": "offline", "dir": str(tmp_path)}, stage="sft", config={}, root=tmp_path) as tracker:
        assert type(tracker) is Tracker
    assert not any(tmp_path.iterdir())
