"""The local engine, spoken to through its command line.

The engine is the ``kftrainer`` binary (C, built and installed with this package). Every
call here is one short-lived process, so a notebook holds no engine state: jobs live in the
state directory, with a supervisor per job, exactly as when they are started from a shell.
Outcomes are read from exit statuses (0 done, 1 failed or invalid, 2 bad usage, 3 no such
TrainJob); stderr is only ever the message.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kftrainer.config import LocalBackendConfig
from kftrainer.tracking import tracking_env


class EngineError(RuntimeError):
    """A ``kftrainer`` command failed; ``str()`` is what it said on stderr."""

    def __init__(self, message: str, returncode: int, args: Sequence[str]):
        super().__init__(message)
        self.returncode = returncode
        self.command = list(args)


class NotFoundError(EngineError):
    """The job named does not exist (the CLI's exit status 3)."""


# The CLI's exit status for a TrainJob named on its command line that does not exist.
EXIT_NOT_FOUND = 3


def find_binary(configured: str | None = None) -> str:
    """The ``kftrainer`` binary: the configured one, the one installed into this
    environment beside its scripts, or the first on PATH."""
    candidates = [configured] if configured else []
    candidates.append(os.path.join(sysconfig.get_path("scripts"), "kftrainer"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which("kftrainer")
    if found:
        return found
    raise FileNotFoundError(
        "the kftrainer engine is not installed: no kftrainer binary "
        + (f"at {configured} " if configured else "in this environment ")
        + "or on PATH (pip install the kftrainer package, or set LocalBackendConfig.kftrainer)"
    )


class Engine:
    """Runs ``kftrainer`` verbs with the configured state directory and runtimes."""

    def __init__(self, cfg: LocalBackendConfig):
        self.binary = find_binary(cfg.kftrainer)
        self.state_dir = (
            os.path.abspath(os.path.expanduser(cfg.state_dir)) if cfg.state_dir else None
        )
        self.runtimes = [os.path.abspath(os.path.expanduser(r)) for r in cfg.runtimes or []]
        self.namespace = cfg.namespace
        # The CLI's own variable carries the list to every verb (and, through train,
        # to the job's supervisor); None leaves the CLI's discovery alone.
        self.plugins_env = (
            None
            if cfg.plugins is None
            else ":".join(os.path.abspath(os.path.expanduser(p)) for p in cfg.plugins)
        )
        self.tracking_env = tracking_env(cfg.tracking_uri, cfg.experiment)

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str] | None:
        if self.plugins_env is None and not self.tracking_env:
            return dict(env) if env is not None else None
        out = dict(env) if env is not None else dict(os.environ)
        if self.plugins_env is not None:
            out["KFTRAINER_PLUGINS"] = self.plugins_env
        out.update(self.tracking_env)
        return out

    def _argv(self, verb: str, args: Sequence[str]) -> list[str]:
        argv = [self.binary]
        if self.state_dir:
            argv += ["--state-dir", self.state_dir]
        return [*argv, verb, *args]

    def runtime_args(self) -> list[str]:
        """``-r`` for every configured runtime path (none: the CLI's own default)."""
        return [a for r in self.runtimes for a in ("-r", r)]

    def run(
        self,
        verb: str,
        *args: str,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """Runs one verb; returns its stdout. Raises NotFoundError when the CLI exits with
        EXIT_NOT_FOUND, EngineError for any other failure (its stderr the message)."""
        argv = self._argv(verb, args)
        proc = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            text=True,
            env=self._env(env),
            check=False,
        )
        if proc.returncode != 0:
            message = proc.stderr.strip() or f"kftrainer {verb} exited with {proc.returncode}"
            cls = NotFoundError if proc.returncode == EXIT_NOT_FOUND else EngineError
            raise cls(message, proc.returncode, argv)
        return proc.stdout

    def json(self, verb: str, *args: str) -> Any:
        """Runs a verb with ``-o json`` and decodes what it prints."""
        return json.loads(self.run(verb, *args, "-o", "json"))

    def stream(self, verb: str, *args: str) -> Iterator[str]:
        """Yields a verb's stdout line by line as it is written (``logs -f``); the
        process is stopped when the caller stops iterating. Its stderr goes to an
        unlinked temporary file, read on failure: a pipe read only after stdout ends
        would stop a process that writes more than a pipe holds to stderr first."""
        argv = self._argv(verb, args)
        with tempfile.TemporaryFile(mode="w+") as errf:
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=errf,
                text=True,
                bufsize=1,
                env=self._env(None),
            )
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    yield line.rstrip("\n")
                proc.wait()
                if proc.returncode != 0:
                    errf.seek(0)
                    err = errf.read().strip()
                    cls = NotFoundError if proc.returncode == EXIT_NOT_FOUND else EngineError
                    raise cls(err or f"kftrainer {verb} failed", proc.returncode, argv)
            finally:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait()
                if proc.stdout:
                    proc.stdout.close()
