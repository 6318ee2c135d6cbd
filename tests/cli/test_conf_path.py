"""Where the commands look for slurm.conf: $SLURM_CONF, the user's own cluster, then the
machine's /etc/slurm/slurm.conf (Slurm's commands' default)."""

from pathlib import Path

from minislurm import client


def test_slurm_conf_then_the_users_cluster_then_the_machines(tmp_path, monkeypatch):
    own, system = tmp_path / "home" / "cluster", tmp_path / "etc" / "slurm.conf"
    monkeypatch.setattr(client, "DEFAULT_DIR", own)
    monkeypatch.setattr(client, "SYSTEM_CONF", system)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    assert Path(client.conf_path()) == own / "slurm.conf"  # neither exists: the message names the user's
    system.parent.mkdir(parents=True)
    system.write_text("SlurmctldPort=1\n")
    assert Path(client.conf_path()) == system
    own.mkdir(parents=True)
    (own / "slurm.conf").write_text("SlurmctldPort=2\n")
    assert Path(client.conf_path()) == own / "slurm.conf"
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "x.conf"))
    assert Path(client.conf_path()) == tmp_path / "x.conf"
