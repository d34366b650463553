"""Config composition: every conf file composes, unknown keys fail, the wheel ships conf/."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from talentrl_cli.config import compose, config_groups, config_hash, resolve_sections
from talentrl_cli.errors import ConfigError
from talentrl_cli.resources import conf_dir

REPO = Path(__file__).resolve().parents[1]
# options whose required keys (???) need a value to resolve
REQUIRED = {"model/hf": ["model.name_or_path=some/model"]}


def _all_options():
    return [(g, p.stem) for g in config_groups() for p in sorted((conf_dir() / g).glob("*.yaml"))]


@pytest.mark.parametrize("group, option", _all_options())
def test_every_conf_file_composes_and_resolves(group, option):
    cfg = compose([f"{group}={option}", *REQUIRED.get(f"{group}/{option}", [])])
    resolved = resolve_sections(cfg, [k for k in cfg if k != "env" or group == "env"])
    assert resolved[group] is not None


def test_groups_match_the_design():
    expected = {"model", "env", "mine", "index", "sft", "rl", "eval", "tracking"}
    assert expected <= set(config_groups())


@pytest.mark.parametrize("override, key, suggestion", [
    ("mine.min_suport=3", "mine.min_suport", "mine.min_support"),
    ("sede=1", "sede", "seed"),
    ("+index.lamda=0.1", "index.lamda", "index.lam"),
])
def test_unknown_keys_name_the_key_and_suggest(override, key, suggestion):
    with pytest.raises(ConfigError) as err:
        compose([override])
    assert key in err.value.message and suggestion in err.value.hint


def test_unknown_group_option_lists_the_choices():
    with pytest.raises(ConfigError, match="available: .*smollm2.*tiny"):
        compose(["model=smolm2"])


def test_required_key_without_value_names_it():
    cfg = compose(["model=hf"])
    with pytest.raises(ConfigError, match="model.name_or_path"):
        resolve_sections(cfg, ["model"])


def test_hash_is_stable_and_sensitive():
    a = resolve_sections(compose(["mine.min_support=3"]), ["seed", "mine"])
    b = resolve_sections(compose(["mine.min_support=4"]), ["seed", "mine"])
    assert config_hash(a) == config_hash(dict(reversed(list(a.items()))))
    assert config_hash(a) != config_hash(b)


def test_config_show_prints_yaml(run_cli):
    code, out, _ = run_cli("config", "show", "model", "model=smollm2")
    assert code == 0 and "kind: smollm2" in out
    code, _, err = run_cli("config", "show", "modle")
    assert code == 1 and "did you mean model" in err


def test_wheel_ships_conf_and_stages_and_composes_from_another_cwd(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
                   check=True, timeout=300)
    (wheel,) = dist.glob("talentrl-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.startswith("talentrl_cli/_resources/")}
    repo_files = {f"talentrl_cli/_resources/{p.relative_to(REPO).as_posix()}"
                  for folder in ("conf", "stages") for p in (REPO / folder).rglob("*.yaml")}
    assert repo_files and repo_files <= shipped
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    work = tmp_path / "elsewhere"
    work.mkdir()
    probe = ("from talentrl_cli.resources import conf_dir, stages_dir; "
             "from talentrl_cli.config import compose; "
             "cfg = compose(['model=smollm2']); print(conf_dir()); print(stages_dir()); print(cfg.model.kind)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=work, capture_output=True, text=True,
                         env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0, out.stderr
    conf, stages, kind = out.stdout.split()
    assert conf.startswith(str(target)) and stages.startswith(str(target)) and kind == "smollm2"


@pytest.mark.parametrize(("override", "message"), [
    ("mine.min_support=abc", "mine.min_support='abc': expected an integer"),
    ("mine.min_support=2.5", "mine.min_support=2.5: expected an integer"),
    ("sft.lr=fast", "sft.lr='fast': expected a number"),
    ("rl.resume=maybe", "expected true or false"),
])
def test_an_override_keeps_its_keys_type(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        compose([override])


@pytest.mark.parametrize("override", ["sft.lr=1", "mine.n_talents=4", "eval.limit=5", "eval.limit=null",
                                      "mine.merge_cosine=0.9"])
def test_overrides_of_compatible_types_pass(override):
    compose([override])
