"""``cluster up --system``: a local cluster installed as this machine's Slurm.

A real Slurm's commands are on every user's PATH and find their cluster through the compiled-in
``/etc/slurm/slurm.conf``, so a tool that cleans the environment (snakemake drops SLURM_*,
JupyterHub passes neither PATH nor SLURM_CONF) still reaches it.  Here that is the same two
things: ``/etc/slurm/slurm.conf`` (and ``tokens/`` beside it, where the commands look for the
user's token) point into the cluster's folder, and ``/usr/local/bin`` gets the commands, each
carrying its cluster as the folder's ``bin/`` ones do.  Nothing is written over a real Slurm's
files or another cluster's: such a machine is refused.  ``cluster down`` takes back exactly
what the folder's ``system`` file lists.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

ETC = Path("/etc/slurm")
BIN = Path("/usr/local/bin")
MARK = "# minislurm: a cluster's command"  # in every shim minislurm writes (see shim_text)


def shim_text(name: str, conf: Path | None, python: str, site_dirs: tuple[str, ...] | None = None) -> str:
    """The command ``name`` of the cluster whose slurm.conf is ``conf``: it finds that cluster
    however it is started (no environment at all, too); an explicit SLURM_CONF still wins.
    (``conf`` None: the commands' own default, /etc/slurm/slurm.conf, as on a docker cluster.)

    It runs ``python -S``: without the scan of site-packages and their ``.pth`` files at every
    start (2-3 ms of a query command's ~25 ms of CPU); minislurm's own folder and that Python's
    site-packages are put on the path instead (``squeue --yaml`` needs PyYAML from there;
    ``site_dirs``: those folders, when the caller knows them, else ``python`` is asked)."""
    paths = [str(Path(__file__).resolve().parents[2]), *(site_packages(python) if site_dirs is None else site_dirs)]
    return (f"#!{python} -S\n{MARK}\nimport os, sys\n"
            f"sys.path += {paths!r}\n"
            + (f"os.environ.setdefault('SLURM_CONF', {str(conf)!r})\n" if conf else "") +
            f"from minislurm.cli.main import main\n"
            f"sys.exit(main([{name!r}, *sys.argv[1:]]))\n")


@functools.cache
def site_packages(python: str) -> tuple[str, ...]:
    """The site-packages folders ``python`` would put on its path (this interpreter's own are
    known without starting another: a local cluster's shims name the Python running it)."""
    if python == sys.executable:
        return tuple(site.getsitepackages())
    code = "import site; print(chr(10).join(site.getsitepackages()))"
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return tuple(result.stdout.split("\n")[:-1])


def _ours(path: Path) -> bool:
    try:
        return MARK in path.read_text(errors="replace")[:400]
    except OSError:
        return False


def conflicts(folder: Path, commands: tuple[str, ...]) -> list[str]:
    """Why this machine cannot take the cluster in ``folder`` as its Slurm (empty: it can)."""
    why = []
    for name in ("slurm.conf", "tokens"):
        path = ETC / name
        if (path.exists() or path.is_symlink()) and not (path.is_symlink() and Path(os.readlink(path)) == folder / name):
            why.append(f"{path} exists and is not this cluster's")
    for name in commands:
        found = shutil.which(name, path=os.pathsep.join(["/usr/local/bin", "/usr/bin", "/bin"]))
        if found and not _ours(Path(found)):
            why.append(f"{found} is not minislurm's (a real Slurm?)")
    return why


def install(folder: Path, commands: tuple[str, ...], python: str) -> list[Path]:
    """Point /etc/slurm at the cluster in ``folder`` and put its commands in /usr/local/bin;
    the paths written are listed in ``folder/system``.  Call :func:`conflicts` first."""
    written = []
    if not ETC.exists():
        ETC.mkdir(parents=True)
        written.append(ETC)  # taken back too, once empty
    for name in ("slurm.conf", "tokens"):
        link = ETC / name
        if not link.is_symlink():
            link.symlink_to(folder / name)
            written.append(link)
    BIN.mkdir(parents=True, exist_ok=True)
    for name in commands:
        shim = BIN / name
        shim.write_text(shim_text(name, folder / "slurm.conf", python))
        shim.chmod(0o755)
        written.append(shim)
    (folder / "system").write_text("".join(f"{p}\n" for p in written))
    compile_commands(python)
    return written


def compile_commands(python: str) -> None:
    """Compile minislurm's modules to bytecode for ``python``, as pip does for what it installs:
    the users the commands are installed for cannot write beside the sources, so without it each
    of their commands compiles every module it imports again (squeue: 65-75 ms of CPU instead
    of 45)."""
    package = Path(__file__).resolve().parents[1]
    subprocess.run([python, "-m", "compileall", "-q", str(package)], check=False, stdout=subprocess.DEVNULL)


def remove(folder: Path) -> list[Path]:
    """Take back what :func:`install` wrote for ``folder`` (what another cluster or a real Slurm
    has put there since is left alone)."""
    record = folder / "system"
    try:
        paths = [Path(line) for line in record.read_text().split()]
    except OSError:
        return []
    removed = []
    for path in reversed(paths):  # the files, then the folder made for them
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
                removed.append(path)
            continue
        mine = (path.is_symlink() and Path(os.readlink(path)).parent == folder) or \
               (not path.is_symlink() and _ours(path) and repr(str(folder / "slurm.conf")) in path.read_text())
        if mine:
            path.unlink()
            removed.append(path)
    record.unlink()
    return removed
