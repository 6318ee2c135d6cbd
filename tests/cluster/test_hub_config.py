"""JupyterHub on the docker cluster, without an engine: the roster's passwords, their hashes, the
hub's service in the compose file (tests/docker/test_hub.py runs it for real)."""

from __future__ import annotations

import yaml

from minislurm.cli.main import main
from minislurm.cluster import compose, passwords


def test_a_password_is_kept_as_a_salted_hash_root_alone_reads(tmp_path):
    table = tmp_path / "passwords"
    passwords.set_passwords({"alice": "correct horse", "bob": "battery staple"}, table)
    text = table.read_text()
    assert "correct horse" not in text and "battery staple" not in text
    assert oct(table.stat().st_mode & 0o777) == "0o600"
    stored = passwords.read(table)
    assert set(stored) == {"alice", "bob"} and stored["alice"].startswith("scrypt$16384$8$1$")
    assert passwords.check("alice", "correct horse", table)
    assert not passwords.check("alice", "battery staple", table)  # bob's
    assert not passwords.check("alice", "correct horse ", table)
    assert not passwords.check("carol", "correct horse", table)  # nobody without a password
    assert not passwords.check("alice", "", table)
    # The same password twice: two salts, two hashes.
    assert passwords.hash_password("same one") != passwords.hash_password("same one")
    # A new roster changes alice's and leaves bob's.
    passwords.set_passwords({"alice": "a new secret"}, table)
    assert passwords.check("alice", "a new secret", table) and not passwords.check("alice", "correct horse", table)
    assert passwords.read(table)["bob"] == stored["bob"]


def test_no_file_and_a_mangled_hash_let_nobody_in(tmp_path):
    assert not passwords.check("alice", "whatever1", tmp_path / "none")
    (tmp_path / "passwords").write_text("alice:scrypt$x$y\nbob:md5$abc\n")
    assert not passwords.check("alice", "whatever1", tmp_path / "passwords")
    assert not passwords.check("bob", "whatever1", tmp_path / "passwords")


def test_a_short_password_or_one_of_two_lines_is_refused():
    for password, message in (("short", "the password of alice is shorter than 8 characters"),
                              ("two\nlines here", "the password of alice has a line break")):
        try:
            passwords.check_strength("alice", password)
        except passwords.PasswordError as exc:
            assert str(exc) == message
        else:
            raise AssertionError(f"accepted {password!r}")


def test_the_roster_csv_names_its_columns():
    text = "Username,Password,UID,email\nalice,correct horse,2001,a@x\n bob ,pass:with:colons,,b@x\n\n"
    assert passwords.read_roster(text) == [("alice:2001", "correct horse"), ("bob", "pass:with:colons")]
    assert passwords.read_roster("user,password\ncarol,\"a, b, c, d\"\n") == [("carol", "a, b, c, d")]


def test_a_roster_without_the_columns_or_a_password_is_refused():
    for text, message in (("alice,secret\n", "needs a header with a user column"),
                          ("user,pw\nalice,x\n", "and a password column; it has user, pw"),
                          ("user,password\nalice,\n", "line 2: alice has no password")):
        try:
            passwords.read_roster(text)
        except passwords.PasswordError as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"accepted {text!r}")


def test_add_users_reads_the_roster_before_anything_else(tmp_path, capsys):
    roster = tmp_path / "students.csv"
    roster.write_text("name,email\nalice,a@x\n")
    assert main(["cluster", "add-users", "--file", str(roster), "--dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == ("minislurm cluster: error: the CSV needs a header with a user column (user, "
                                       "username, name, login) and a password column; it has name, email\n")


def test_the_hub_is_a_service_only_when_asked_published_on_loopback():
    assert "hub" not in yaml.safe_load(compose.compose_yaml(compose.Shape(nodes=1)))["services"]
    doc = yaml.safe_load(compose.compose_yaml(compose.Shape(nodes=2, hub_port=8011)))
    hub = doc["services"]["hub"]
    assert hub["command"] == ["hub"] and hub["hostname"] == "hub" and hub["depends_on"] == ["ctld"]
    assert hub["ports"] == ["127.0.0.1:${HUB_PORT}:8000"]
    # It reads the users (and their password hashes) but never writes them; it submits from /home.
    assert "users:/var/lib/extrausers:ro" in hub["volumes"] and "etc:/etc/slurm:ro" in hub["volumes"]
    assert "${HOME_VOLUME:-home}:/home" in hub["volumes"] and "hub:/srv/jupyterhub" in hub["volumes"]
    assert set(doc["volumes"]) == {"etc", "users", "state", "home", "hub"}
    assert "HUB_PORT=8011" in compose.env_file(compose.Shape(hub_port=8011)).splitlines()


def test_the_hub_port_is_recorded_for_the_next_start(tmp_path):
    compose.write(tmp_path, compose.Shape(nodes=2, hub_port=8011))
    assert compose.read(tmp_path)["hub_port"] == 8011
    compose.write(tmp_path, compose.Shape(nodes=2))
    assert compose.read(tmp_path)["hub_port"] is None


def test_hub_without_docker_is_refused(capsys, tmp_path):
    assert main(["cluster", "up", "--hub", "--dir", str(tmp_path)]) == 1
    assert "--gpu, --jupyter-port and --hub are for docker clusters (add --docker)" in capsys.readouterr().err
