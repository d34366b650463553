"""The versioned artifact store: `<root>/<stage>/<version>/` with a `manifest.json`.

A stage writes into a hidden temporary folder beside its versions; publishing computes
the sha256 of every file, then, under a per-stage file lock, picks the next version,
writes the manifest, renames the folder into place and only then moves `latest`. A stage
killed at any point leaves no visible version (its temporary folder is removed by the next
publisher once its process is gone).

Refs: `stage:latest`, `stage:vN`, or a path to an artifact folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from talentrl_cli import __version__
from talentrl_cli.errors import ArtifactError

MANIFEST = "manifest.json"
CHECKSUM = "manifest_sha256"
LATEST = "latest"
_REF = re.compile(r"^(?P<stage>[a-z][a-z0-9_]*):(?P<version>latest|v[1-9][0-9]*)$")
_VERSION = re.compile(r"^v([1-9][0-9]*)$")
_TMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class Artifact:
    path: Path
    manifest: dict[str, Any]

    @property
    def stage(self) -> str:
        return self.manifest["stage"]

    @property
    def version(self) -> str:
        return self.manifest["version"]

    @property
    def ref(self) -> str:
        return f"{self.stage}:{self.version}"

    @property
    def digest(self) -> str:
        return self.manifest["digest"]

    def file(self, name: str) -> Path:
        """A file of this artifact; a clear error when the manifest does not list it."""
        if name not in self.manifest.get("files", {}):
            raise ArtifactError(f"{self.ref} has no file {name!r} ({self.path})")
        return self.path / name


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_checksum(manifest: dict[str, Any]) -> str:
    """sha256 of the manifest's own fields (all but this one), canonical JSON: the file list's
    digest covers the files, this covers the rest (config, inputs, metrics) against a changed
    byte that still parses."""
    body = {k: v for k, v in manifest.items() if k != CHECKSUM}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def content_digest(stage: str, config_hash: str, files: dict[str, str]) -> str:
    """Digest of what an artifact is: its stage, config and file contents (not its version)."""
    blob = json.dumps({"stage": stage, "config_hash": config_hash, "files": files}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


@functools.cache
def code_version() -> str:
    """The package version, plus the git commit (and `.dirty`) when run from a checkout."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{'.dirty' if dirty else ''}" if sha else __version__


class ArtifactStore:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise ArtifactError(f"the artifacts root {self.root} is a file, not a folder",
                                "point --artifacts-root (or TALENTRL_HOME) at a folder")

    # -- reading -----------------------------------------------------------------------

    def stages(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and _REF.match(f"{p.name}:v1"))

    def versions(self, stage: str) -> list[Artifact]:
        return [load_artifact(p) for p in self._version_folders(stage)]

    def _version_folders(self, stage: str) -> list[Path]:
        folder = self.root / stage
        if not folder.is_dir():
            return []
        found = [p for p in folder.iterdir() if _VERSION.match(p.name) and (p / MANIFEST).is_file()]
        return sorted(found, key=lambda p: int(p.name[1:]))

    def list(self, stage: str | None = None) -> list[Artifact]:
        stages = [stage] if stage else self.stages()
        return [a for s in stages for a in self.versions(s)]

    def scan(self, stage: str | None = None) -> tuple[list[Artifact], list[str]]:
        """Every readable artifact, and one message per version folder whose manifest is not:
        `artifacts list` and `verify --all` report a corrupt one and go on to the others."""
        found, broken = [], []
        for name in [stage] if stage else self.stages():
            for folder in self._version_folders(name):
                try:
                    found.append(load_artifact(folder))
                except ArtifactError as err:
                    broken.append(err.message)
        return found, broken

    def resolve(self, ref: str) -> Artifact:
        """An artifact by `stage:latest`, `stage:vN` or an explicit path."""
        match = _REF.match(ref)
        if match:
            stage, version = match["stage"], match["version"]
            pointed = version == LATEST
            if pointed:
                version = self._latest_version(stage)
            path = self.root / stage / version
            if path.is_symlink() and not path.resolve().is_relative_to(self.root):
                raise ArtifactError(f"{stage}:{version} is a link to {path.resolve()}, outside the root {self.root}",
                                    "refs name artifacts inside the root; pass an outside folder by its path")
            if path.is_dir() and not (path / MANIFEST).is_file():
                raise ArtifactError(f"{stage}:{match['version']} = {path} has no {MANIFEST}: deleted, or not an artifact",
                                    f"rebuild it with `talentrl {stage} --force`, or pass an intact version "
                                    f"(`talentrl artifacts list {stage}`)")
            if pointed and not (path / MANIFEST).is_file():
                raise ArtifactError(f"stale pointer {self.root / stage / LATEST}: it names {version}, which does "
                                    f"not exist under {self.root / stage}",
                                    f"write an existing version into it (`talentrl artifacts list {stage}`) "
                                    f"or delete it and pass {stage}:vN")
            if not (path / MANIFEST).is_file():
                raise ArtifactError(f"no artifact {stage}:{version} under {self.root}",
                                    f"list them with `talentrl artifacts list {stage}`")
            return load_artifact(path)
        if ":" in ref and not Path(ref).exists():
            raise ArtifactError(f"bad artifact ref {ref!r}",
                                "use stage:latest, stage:vN (e.g. mine:v3) or a path to an artifact folder")
        path = Path(ref).expanduser()
        if not (path / MANIFEST).is_file():
            raise ArtifactError(f"{ref!r} is neither a ref (stage:latest, stage:vN) nor an artifact folder "
                                f"(no {MANIFEST} in {path})")
        return load_artifact(path)

    def _latest_version(self, stage: str) -> str:
        pointer = self.root / stage / LATEST
        if not pointer.is_file():
            raise ArtifactError(f"no {stage} artifact under {self.root} yet",
                                f"run `talentrl {stage}` first, or pass a ref or path")
        version = pointer.read_text().strip()
        if not _VERSION.match(version):
            raise ArtifactError(f"corrupt pointer {pointer}: {version[:40]!r}",
                                f"delete it; the next `talentrl {stage}` run rewrites it")
        return version

    def resolve_verified(self, ref: str) -> Artifact:
        artifact = self.resolve(ref)
        problems = verify(artifact)
        if problems:
            listed = "; ".join(problems[:5])
            raise ArtifactError(f"input {ref} = {artifact.ref} ({artifact.path}) fails verification: {listed}",
                                f"rerun `talentrl {artifact.stage} --force` to rebuild it")
        return artifact

    def find_reusable(self, stage: str, config_hash: str, inputs: dict[str, str]) -> Artifact | None:
        """The newest intact artifact of `stage` with the same config hash and input digests."""
        for artifact in reversed(self.versions(stage)):
            manifest = artifact.manifest
            same_inputs = {k: v["digest"] for k, v in manifest.get("inputs", {}).items()} == inputs
            if manifest.get("config_hash") == config_hash and same_inputs and not verify(artifact):
                return artifact
        return None

    # -- publishing --------------------------------------------------------------------

    @contextlib.contextmanager
    def staging(self, stage: str) -> Iterator[Path]:
        """A private temporary folder for a stage's outputs; removed if the body fails."""
        folder = self.root / stage
        tmp = folder / f"{_TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _remove_orphaned_staging(folder)
            tmp.mkdir()
        except OSError as err:  # an unwritable root, a full disk, a file where a folder should be
            raise ArtifactError(f"cannot write under the artifacts root {self.root}: {err.strerror} ({err.filename})",
                                "point --artifacts-root (or TALENTRL_HOME) at a writable folder") from None
        try:
            yield tmp
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def publish(self, tmp: Path, *, stage: str, config: dict[str, Any], config_hash: str,
                inputs: dict[str, Artifact], metrics: dict[str, Any]) -> Artifact:
        """Turn a finished staging folder into the next version, atomically."""
        _apply_umask_modes(tmp)
        files = _digest_tree(tmp)
        manifest = {
            "stage": stage,
            "version": None,
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "code_version": code_version(),
            "config": config,
            "config_hash": config_hash,
            "inputs": {name: _input_record(a) for name, a in sorted(inputs.items())},
            "files": files,
            "digest": content_digest(stage, config_hash, files),
            "metrics": metrics,
        }
        with self._lock(stage):
            version = f"v{self._next_number(stage)}"
            manifest["version"] = version
            manifest[CHECKSUM] = manifest_checksum(manifest)
            _write_json_durably(tmp / MANIFEST, manifest)
            final = self.root / stage / version
            os.rename(tmp, final)
            _write_text_atomically(self.root / stage / LATEST, version + "\n")
        return Artifact(final, manifest)

    def _next_number(self, stage: str) -> int:
        numbers = [int(p.name[1:]) for p in (self.root / stage).iterdir() if _VERSION.match(p.name)]
        return max(numbers, default=0) + 1

    @contextlib.contextmanager
    def _lock(self, stage: str) -> Iterator[None]:
        with open(self.root / stage / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def load_artifact(path: Path) -> Artifact:
    manifest_path = path / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ArtifactError(f"unreadable manifest {manifest_path}: {err}") from None
    missing = [k for k in ("stage", "version", "files", "digest", "config_hash") if k not in manifest]
    if missing:
        raise ArtifactError(f"manifest {manifest_path} lacks {', '.join(missing)}")
    return Artifact(path.resolve(), manifest)


def verify(artifact: Artifact) -> list[str]:
    """Every problem with an artifact's files: missing, changed or unexpected. Empty = intact."""
    problems: list[str] = []
    expected: dict[str, str] = artifact.manifest["files"]
    for name, digest in sorted(expected.items()):
        path = artifact.path / name
        if not path.is_file():
            problems.append(f"missing file {name}")
        elif sha256_file(path) != digest:
            problems.append(f"sha256 mismatch in {name}")
    actual = _list_files(artifact.path) - {MANIFEST}
    problems += [f"unexpected file {name}" for name in sorted(actual - set(expected))]
    m = artifact.manifest
    if content_digest(m["stage"], m["config_hash"], expected) != m["digest"]:
        problems.append(f"{MANIFEST}: its digest does not match its file list")
    if CHECKSUM in m and manifest_checksum(m) != m[CHECKSUM]:  # artifacts published before it have none
        problems.append(f"{MANIFEST}: changed since it was published ({CHECKSUM} mismatch)")
    return problems


def lineage(store: ArtifactStore, artifact: Artifact) -> dict[str, Any]:
    """The tree of inputs behind an artifact, as nested dicts."""
    children = {}
    for name, record in artifact.manifest.get("inputs", {}).items():
        try:
            parent = store.resolve(record["ref"])
            if parent.digest != record["digest"]:
                raise ArtifactError("digest changed")
            children[name] = lineage(store, parent)
        except ArtifactError as err:
            children[name] = {"ref": record["ref"], "digest": record["digest"], "missing": str(err)}
    return {"ref": artifact.ref, "digest": artifact.digest, "path": str(artifact.path),
            "created": artifact.manifest.get("created"), "inputs": children}


def _input_record(artifact: Artifact) -> dict[str, str]:
    return {"ref": artifact.ref, "stage": artifact.stage, "version": artifact.version,
            "digest": artifact.digest, "path": str(artifact.path)}


def _list_files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _digest_tree(folder: Path) -> dict[str, str]:
    return {name: sha256_file(folder / name) for name in sorted(_list_files(folder) - {MANIFEST})}


def _write_json_durably(path: Path, data: Any) -> None:
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=False, default=str)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())


def _write_text_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _apply_umask_modes(folder: Path) -> None:
    """One mode for every published file (0666) and folder (0777), less the umask: temp-file
    writers (our atomic JSONL writer, safetensors) create 0600, which left artifacts with mixed
    modes that a group sharing a root could half read."""
    umask = os.umask(0)
    os.umask(umask)
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)


def _remove_orphaned_staging(folder: Path) -> None:
    """Delete staging folders whose writer process no longer exists (e.g. after SIGKILL)."""
    for tmp in folder.glob(f"{_TMP_PREFIX}*"):
        pid = tmp.name[len(_TMP_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
