"""agentwire-client as a newcomer gets it: from a pristine copy of the checkout (only the files git
tracks, outside the repository), built into a wheel and an sdist, installed into fresh venvs; the
README's ``python`` blocks checked with ``mypy --strict`` there and run against $AGENTWIRE_BIN.

Run by scripts/test with the client's dev venv (it has the pinned ``build``):
    AGENTWIRE_BIN=target/debug/agentwire clients/python/.venv/bin/python -m pytest tests/client-packages
$AGENTWIRE_TEST_PYTHON picks the interpreter of the fresh venvs (default: the one running pytest),
e.g. a python3.10 to check the minimum version.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Pattern, Sequence, Tuple

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
AGENTWIRE_BIN = str(Path(os.environ.get("AGENTWIRE_BIN") or REPO / "target" / "debug" / "agentwire").resolve())
README = REPO / "clients" / "python" / "README.md"
CONSTRAINTS = REPO / "clients" / "python" / "requirements-dev.lock"
VENV_PYTHON = os.environ.get("AGENTWIRE_TEST_PYTHON") or sys.executable

# What each README block must print (in README order). A new block needs an entry here.
EXPECTED_OUTPUT: List[Tuple[str, List[Pattern[str]]]] = [
    ("the rpc example: host tool, streamed answer, completed", [re.compile(r"summar|weather", re.I), re.compile(r"\ncompleted\n$")]),
    ("the wire example: streamed answer, finished", [re.compile(r"\nfinished\n$")]),
]


def run(args: Sequence[str], cwd: Path, env: Optional[Dict[str, str]] = None, timeout: float = 600) -> str:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} (in {cwd}) exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def readme_blocks(path: Path, lang: str) -> List[Tuple[int, str]]:
    """Every block fenced with ```lang, in order, with the line its code starts on."""
    lines = path.read_text().split("\n")
    blocks: List[Tuple[int, str]] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```" + lang:
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            assert end < len(lines), f"{path}:{i + 1}: unclosed block"
            blocks.append((i + 2, "\n".join(lines[i + 1 : end]) + "\n"))
            i = end
        i += 1
    return blocks


def pristine_copy(folder: str, dest: Path) -> Path:
    """The files git tracks (plus new, not ignored ones) under ``folder``: a clean clone's view."""
    out = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", folder], REPO)
    copied = 0
    for name in filter(None, out.split("\0")):
        src = REPO / name
        if not src.exists():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / name)
        copied += 1
    assert copied > 10, f"only {copied} files under {folder}"
    return dest / folder


def tree(root: Path) -> List[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def venv(path: Path) -> Path:
    """A fresh venv; packages go in with this venv's pip (``pip --python``), which saves ensurepip."""
    run([VENV_PYTHON, "-m", "venv", "--without-pip", str(path)], path.parent)
    return path / "bin" / "python"


def pip(*args: str, python: Optional[Path] = None) -> str:
    target = ["--python", str(python)] if python else []
    return run([sys.executable, "-m", "pip", *target, "install", "--quiet", "--disable-pip-version-check", *args], REPO)


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    assert Path(AGENTWIRE_BIN).is_file(), f"build agentwire first (cargo build): {AGENTWIRE_BIN}"
    with tempfile.TemporaryDirectory(prefix="agentwire-py-package-") as tmp:
        path = Path(tmp)
        assert REPO not in path.parents, "the test project must live outside the repository"
        yield path


@pytest.fixture(scope="module")
def checkout(work: Path) -> Path:
    return pristine_copy("clients/python", work / "agentwire")


@pytest.fixture(scope="module")
def dists(work: Path, checkout: Path) -> Dict[str, Path]:
    """``python -m build`` on the pristine copy: the wheel and the sdist."""
    before = tree(checkout)
    out = work / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(out), str(checkout)], work)
    assert tree(checkout) == before, "python -m build left files in the checkout"
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, os.listdir(out)
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_wheel_ships_py_typed_and_the_real_minimum_python(dists: Dict[str, Path]) -> None:
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
        for needed in ("agentwire_client/__init__.py", "agentwire_client/py.typed", "agentwire_client/models.py", "agentwire_client/protocol.py", "agentwire_client/wire.py"):
            assert needed in names, f"{needed} missing from the wheel: {sorted(names)}"
        assert not any(n.startswith("tests/") for n in names), "tests in the wheel"
        metadata = next(wheel.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert "Requires-Python: >=3.10" in metadata
    assert "Requires-Dist: pydantic" in metadata
    readme = README.read_text()
    assert "Python ≥ 3.10" in readme and "3.9" not in readme


def test_sdist_builds_the_same_package(dists: Dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    for needed in ("pyproject.toml", "README.md", "src/agentwire_client/py.typed", "src/agentwire_client/client.py"):
        assert needed in names, f"{needed} missing from the sdist: {sorted(names)}"


def test_pip_install_of_the_checkout_leaves_nothing_behind_and_the_sdist_installs(work: Path, checkout: Path, dists: Dict[str, Path]) -> None:
    # pip's own install of a folder (an in-tree build) and of the sdist, into throwaway targets.
    # (--no-build-isolation: the dev venv has the pinned hatchling; python -m build above used isolation.)
    before = tree(checkout)
    pip("--no-deps", "--no-build-isolation", "--target", str(work / "t-folder"), str(checkout))
    assert tree(checkout) == before, f"pip install left files in the checkout: {sorted(set(tree(checkout)) - set(before))}"
    for target, source in (("t-folder", "the folder"), ("t-sdist", "the sdist")):
        if target == "t-sdist":
            pip("--no-deps", "--no-build-isolation", "--target", str(work / target), str(dists["sdist"]))
        package = work / target / "agentwire_client"
        assert (package / "py.typed").is_file() and (package / "client.py").is_file(), f"{source} installed {tree(work / target)}"


def test_readme_examples_pass_mypy_strict_and_run_from_the_wheel(work: Path, dists: Dict[str, Path]) -> None:
    project = work / "project"
    project.mkdir()
    python = venv(project / ".venv")
    pip("-c", str(CONSTRAINTS), str(dists["wheel"]), python=python)
    blocks = readme_blocks(README, "python")
    assert len(blocks) == len(EXPECTED_OUTPUT), f"README has {len(blocks)} python blocks; give each an entry in EXPECTED_OUTPUT"
    files = []
    for line, code in blocks:
        path = project / f"readme_line_{line}.py"
        path.write_text(code)
        files.append(path)
    # The dev venv's pinned mypy, checking against what the fresh venv has installed (the wheel's
    # py.typed package and its dependencies), not against the checkout.
    run([sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python), "--cache-dir", str(project / ".mypy_cache"), *(str(f) for f in files)], project)
    env = {**os.environ, "AGENTWIRE_BIN": AGENTWIRE_BIN}
    for (line, _), path, (what, patterns) in zip(blocks, files, EXPECTED_OUTPUT):
        proc = subprocess.run([str(python), str(path)], cwd=project, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"README.md:{line} ({what}) exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        for pattern in patterns:
            assert pattern.search(proc.stdout), f"README.md:{line} ({what}) printed:\n{proc.stdout}"
