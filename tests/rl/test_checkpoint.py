"""RL checkpoints: a resume picks the newest complete checkpoint, never one cut off mid-write."""

from __future__ import annotations

from talentrl_cli.rl import checkpoint


def test_latest_skips_a_checkpoint_still_under_its_temporary_name(tmp_path):
    (tmp_path / "step-2").mkdir()
    (tmp_path / "step-10").mkdir()
    (tmp_path / ".step-12.tmp").mkdir()  # a kill during save: written but never renamed
    (tmp_path / ".step-12.tmp" / "trainable.safetensors").write_bytes(b"\x00" * 3)
    (tmp_path / "step-x").mkdir()
    assert checkpoint.latest(tmp_path) == tmp_path / "step-10"  # by number, not by name order


def test_no_checkpoint_yet(tmp_path):
    assert checkpoint.latest(tmp_path) is None
