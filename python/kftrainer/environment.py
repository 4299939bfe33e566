"""The environment a job's processes run in: the caller's own interpreter.

A notebook's training function should see what the notebook sees: the same interpreter
(``sys.executable``), its packages and its PATH (so ``torchrun`` and ``mpirun`` resolve as
they do for the user), not a throwaway virtual environment rebuilt on every ``train()``.

- The Kubeflow SDK's commands run ``python`` (and ``python -m pip``). ``python`` may not
  name the caller's interpreter (Debian has ``python3`` only; a conda or pyenv shell may
  put another first), so a small directory of shims, ``python`` and ``python3`` scripts that
  exec ``sys.executable``, goes first on PATH. Scripts, not symlinks: an interpreter finds
  its virtual environment from the path it was started by.
- ``packages_to_install`` go into a virtual environment layered on the caller's (the base
  interpreter's site-packages through ``--system-site-packages``, and the caller's own site
  directories, a venv's included, through a ``.pth`` file), keyed by the interpreter, the
  packages and the index URLs, built once (pip's progress drawn as in a shell) and reused by
  every later job that asks for the same; the caller's own environment is never modified.
  A build that failed leaves nothing.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import hashlib
import json
import os
import pty
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import termios
from collections.abc import Mapping, Sequence


def cache_root(configured: str | None = None) -> str:
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kftrainer", "venvs")


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def _write_if_changed(path: str, text: str, mode: int) -> None:
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def interpreter_shims(root: str) -> str:
    """A directory whose ``python`` and ``python3`` run sys.executable."""
    d = os.path.join(root, "shims", _key(sys.executable), "bin")
    os.makedirs(d, mode=0o700, exist_ok=True)
    quoted = "'" + sys.executable.replace("'", "'\\''") + "'"
    for name in ("python", "python3"):
        _write_if_changed(os.path.join(d, name), f'#!/bin/sh\nexec {quoted} "$@"\n', 0o755)
    return d


@contextlib.contextmanager
def _locked(path: str):
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


_TERMINAL_CODES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _run_shown(argv: Sequence[str]) -> tuple[int, list[str]]:
    """Runs argv with its output on a pseudo-terminal, copied to our stderr as it comes, so
    pip draws its download progress as it does in a shell (to a pipe it draws only the end);
    returns the exit status and the last 40 lines, terminal codes removed."""
    leader, follower = pty.openpty()
    attrs = termios.tcgetattr(follower)
    attrs[1] &= ~termios.ONLCR  # "\n" stays "\n" (a log file, a notebook)
    termios.tcsetattr(follower, termios.TCSANOW, attrs)
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
        )
    finally:
        os.close(follower)
    decode = codecs.getincrementaldecoder("utf-8")("replace")
    seen = ""
    with os.fdopen(leader, "rb", buffering=0) as out:
        while True:
            try:
                chunk = out.read(65536)
            except OSError:  # EIO: every writer is gone
                chunk = b""
            if not chunk:
                break
            text = decode.decode(chunk)
            sys.stderr.write(text)
            sys.stderr.flush()
            seen = (seen + text)[-65536:]
    lines = [_TERMINAL_CODES.sub("", line).rstrip() for line in re.split(r"\r|\n", seen)]
    return proc.wait(), [line for line in lines if line][-40:]


def _pip_install(venv: str, packages: Sequence[str], index_urls: Sequence[str], field: str) -> None:
    argv = [os.path.join(venv, "bin", "python"), "-m", "pip", "install"]
    argv.append("--disable-pip-version-check")
    if index_urls:
        argv += ["--index-url", index_urls[0]]
        for url in index_urls[1:]:
            argv += ["--extra-index-url", url]
    argv += list(packages)
    status, tail = _run_shown(argv)
    if status != 0:
        raise ValueError(f"{field}: pip could not install {list(packages)}:\n" + "\n".join(tail))


def _caller_site_dirs() -> list[str]:
    """Where the caller's packages are: its site directories and, when enabled, its user
    site. A venv made from a venv's interpreter sees the base interpreter's site-packages,
    not the caller's: these are added to the package environment explicitly."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def _layer_on_caller(venv: str) -> None:
    """Makes the caller's packages importable in venv after its own (a .pth file whose
    import line runs site.addsitedir, so the caller's own .pth files, editable installs
    included, apply too): the job sees `kubeflow`, `kftrainer` and the rest of the
    notebook's environment, with packages_to_install first."""
    scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
    purelib = sysconfig.get_path("purelib", scheme, vars={"base": venv, "platbase": venv})
    lines = [f"import site; site.addsitedir({d!r})" for d in _caller_site_dirs()]
    with open(os.path.join(purelib, "_kftrainer_caller.pth"), "w") as f:
        f.write("\n".join(lines) + "\n")


def cached_venv(
    name: str,
    packages: Sequence[str],
    index_urls: Sequence[str],
    root: str | None,
    *,
    field: str,
    about: str,
    layered: bool,
) -> str:
    """The cached virtual environment ``name`` (under the cache root) holding ``packages``
    over the caller's interpreter, built once under a lock (another process building it
    is waited for) and reused while complete. ``layered`` puts the caller's packages
    under it (``--system-site-packages`` and the caller's site directories); otherwise it
    holds only ``packages``, as an image would. Raises ValueError starting with ``field``
    (the setting that asked) when venv or pip fail; a failed build leaves nothing."""
    base = cache_root(root)
    os.makedirs(base, mode=0o700, exist_ok=True)
    venv = os.path.join(base, name)
    done = os.path.join(venv, ".kftrainer-complete")
    if os.path.exists(done):
        return venv
    with _locked(venv + ".lock"):
        if os.path.exists(done):  # another process built it while we waited
            return venv
        shutil.rmtree(venv, ignore_errors=True)  # what an interrupted build left
        print(
            f"kftrainer: building {about} over {sys.executable} (once; cached in {venv})",
            file=sys.stderr,
            flush=True,
        )
        argv = [sys.executable, "-m", "venv", *(["--system-site-packages"] if layered else [])]
        try:
            subprocess.run([*argv, venv], check=True, capture_output=True, text=True)
            if layered:
                _layer_on_caller(venv)
            _pip_install(venv, packages, index_urls, field)
        except subprocess.CalledProcessError as e:
            shutil.rmtree(venv, ignore_errors=True)
            raise ValueError(
                f"{field}: cannot create a virtual environment with "
                f"{sys.executable}: {e.stderr.strip()}"
            ) from None
        except BaseException:
            shutil.rmtree(venv, ignore_errors=True)
            raise
        with open(done, "w"):
            pass
    return venv


def package_venv(
    packages: Sequence[str], index_urls: Sequence[str], root: str | None = None
) -> str:
    """The cached environment for ``packages_to_install``, layered on the caller's."""
    return cached_venv(
        _key(sys.executable, sys.version, list(packages), list(index_urls)),
        packages,
        index_urls,
        root,
        field="packages_to_install",
        about=f"an environment for packages_to_install {list(packages)}",
        layered=True,
    )


def job_environment(
    packages: Sequence[str] | None,
    index_urls: Sequence[str],
    cache_dir: str | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment to submit a job with: the caller's, with PATH led by the
    package environment (when packages are asked for) or the interpreter shims, then
    the interpreter's own directory."""
    env = dict(os.environ if base is None else base)
    first: list[str] = []
    if packages:
        venv = package_venv(packages, index_urls, cache_dir)
        first.append(os.path.join(venv, "bin"))
        env["VIRTUAL_ENV"] = venv
    else:
        first.append(interpreter_shims(os.path.dirname(cache_root(cache_dir))))
    first.append(os.path.dirname(sys.executable))
    rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p not in first]
    env["PATH"] = os.pathsep.join(first + rest)
    return env
