"""The agent's spool: root writes each batch script there, so no user may plant anything on its way."""

import os
import stat

import pytest

from minislurm.slurmd import spool
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
