"""sshare -U/--Users, -o/--format and -e as sshare 22.05 has them (src/sshare/sshare.c and
process.c of slurm-22-05-9-1; not yet recorded on the twin)."""

import pytest

from share_tree import tree_and_rows  # the tree of test_format_sprio_sshare.py

from minislurm.cli import sshare
from minislurm.cli.fmt.sshare import format_sshare, parse_fields

def test_users_only_leaves_out_root_and_accounts_unindented():
    rows, parents = tree_and_rows()
    assert format_sshare(rows, all_users=True, parents=parents, users_only=True, noheader=True,
                         parsable2=True) == (
        "eval|carol|1|1.000000|1800|1.000000|1.000000\n"
        "research|alice|1|0.333333|7200|0.666667|0.250000\n"
        "research|bob|1|0.333333|3600|0.333333|0.500000\n"
        "vision|dan|1|1.000000|0|0.000000|0.750000\n")


def test_format_picks_columns_by_leading_part_with_widths():
    rows, parents = tree_and_rows()
    fields = parse_fields("acc,User%6,fairs,n")
    assert fields == [("Account", -20), ("User", 6), ("FairShare", 10), ("NormShares", 11)]
    assert format_sshare(rows, users=["bob"], parents=parents, fields=fields).splitlines()[:5] == [
        "Account                User  FairShare  NormShares ",
        "-------------------- ------ ---------- ----------- ",
        "root                                      0.000000 ",
        " eval                                     0.400000 ",
        " research                                 0.600000 "]


def test_an_unknown_field_is_refused_before_any_request(capsys, monkeypatch):
    monkeypatch.setattr(sshare, "Client", None)  # never built
    assert sshare.main(["--format=Account,Bogus"]) == 1
    assert capsys.readouterr().err == 'sshare: error: Invalid field requested: "Bogus"\n'


def test_helpformat_lists_the_fields(capsys):
    assert sshare.main(["-e"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("Account           Cluster           EffectvUsage      FairShare        ")
    assert len(out.splitlines()) == 4 and "TRESRunMins" in out


@pytest.mark.parametrize("argv", [["-U"], ["--Users"]])
def test_users_option_reaches_the_format(argv, monkeypatch, capsys):
    rows, parents = tree_and_rows()

    class Fake:
        def __init__(self, *a, **k):
            pass

        def call(self, method, path, *a, **k):
            return {"shares": [vars(r) | {} for r in rows], "parents": parents}

    monkeypatch.setattr(sshare, "Client", Fake)
    assert sshare.main([*argv, "-a", "-n", "-P"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "eval|carol|1|1.000000|1800|1.000000|1.000000"
