"""The agent's spool: root writes each batch script there, so no user may plant anything on its way."""

import errno
import os
import stat
import subprocess

import pytest

from minislurm.slurmd import spool
from minislurm.slurmd.agent import NodeAgent
from minislurm.slurmd.spawn import Identity

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the checks are for an agent running as root")
NOBODY = 65534


def test_a_spool_others_could_change_is_refused(tmp_path):
    spool.prepare(tmp_path / "ok" / "gpu01")
    assert stat.S_IMODE(os.stat(tmp_path / "ok" / "gpu01").st_mode) == 0o755
    (tmp_path / "open").mkdir(mode=0o777)
    os.chmod(tmp_path / "open", 0o777)
    with pytest.raises(SystemExit, match="may be changed by other users"):
        spool.prepare(tmp_path / "open" / "gpu01")
    (tmp_path / "theirs").mkdir()
    os.chown(tmp_path / "theirs", NOBODY, NOBODY)
    with pytest.raises(SystemExit, match="may be changed by other users"):
        spool.prepare(tmp_path / "theirs")


def test_a_job_folder_is_made_afresh_whatever_was_planted_there(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "slurm_script").write_text("precious\n")
    folder = tmp_path / "spool"
    folder.mkdir()
    (folder / "job00042").symlink_to(target)
    who = Identity(NOBODY, NOBODY, "nobody", [NOBODY])
    path = spool.write_script(folder, 42, 1, "#!/bin/sh\necho hi\n", who)
    assert (target / "slurm_script").read_text() == "precious\n"
    assert not (folder / "job00042").is_symlink() and path.read_text() == "#!/bin/sh\necho hi\n"
    st, dst = os.stat(path), os.stat(folder / "job00042")
    assert (st.st_uid, stat.S_IMODE(st.st_mode), dst.st_uid, stat.S_IMODE(dst.st_mode)) == (NOBODY, 0o700, NOBODY, 0o700)
    assert [p.name for p in folder.iterdir()] == ["job00042"]
    (folder / "job00042" / "left-by-the-user").write_text("x")
    spool.write_script(folder, 42, 2, "#!/bin/sh\n", who)
    assert sorted(p.name for p in (folder / "job00042").iterdir()) == ["slurm_script"]


def test_a_job_folder_is_removed_without_following_links(tmp_path):
    """The folder is its user's: whatever they left there, links included, goes, and nothing
    the links point to."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("keep\n")
    folder = tmp_path / "spool"
    folder.mkdir()
    who = Identity(NOBODY, NOBODY, "nobody", [NOBODY])
    spool.write_script(folder, 7, 0, "#!/bin/sh\n", who)
    (folder / "job00007" / "link").symlink_to(target)
    (folder / "job00008").symlink_to(target)  # planted before the agent made it (a stale one)
    (folder / "notes").write_text("not a job's\n")
    assert spool.remove(folder, 7) and spool.remove(folder, 8) and not spool.remove(folder, 9)
    assert sorted(p.name for p in folder.iterdir()) == ["notes"]
    assert (target / "precious").read_text() == "keep\n"


def test_a_script_that_does_not_fit_fails_its_job_and_leaves_nothing(tmp_path):
    folder = tmp_path / "spool"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(folder)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with pytest.raises(spool.SpoolFull, match=r"job00005: No space left on device") as err:
            spool.write_script(folder, 5, 0, "#!/bin/sh\n" + "#" * 200_000 + "\n", Identity())
        assert err.value.errno == errno.ENOSPC
        assert list(folder.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_an_earlier_runs_end_never_removes_a_later_runs_script(tmp_path):
    """A requeued job's new run writes its script where the old one's was: the old run's end
    (or the controller's terminate of it) must leave it."""
    agent = NodeAgent("gpu01", key=b"k" * 32, ctld="127.0.0.1:9", conf=None, cpus=1, memory=100, gpus=0,
                      spool=tmp_path)
    spool.write_script(tmp_path, 42, 1, "#!/bin/sh\n", Identity())
    agent.spooled[42] = 1
    agent._drop_spool(42, 0)
    agent._drop_leftover(42)
    assert (tmp_path / "job00042" / "slurm_script").exists()
    agent._drop_spool(42, 1)
    assert not (tmp_path / "job00042").exists() and agent.spooled == {}
    spool.write_script(tmp_path, 43, 0, "#!/bin/sh\n", Identity())  # from before a restart: nobody's
    agent._drop_leftover(43)
    assert list(tmp_path.iterdir()) == []
