"""sacctmgr's show/list output (minislurm/cli/sacctmgr.py, fmt/sacctmgr.py) from the controller's
association rows, with a stand-in client: sacctmgr 22.05's columns, widths, -n/-p/-P, and the
exact call snakemake-executor-plugin-slurm makes to check an account, parsed as the plugin does."""

from __future__ import annotations

import pytest

from minislurm.cli import sacctmgr
from minislurm.core.accounts import parse_accounts
from minislurm.ctld.associations import view

TREE = "Account=research\nAccount=ml Parent=research Fairshare=4\nUser=ann Account=research\nUser=ann Account=ml\n"


class FakeClient:
    def call(self, method, path, body=None, **kw):
        assert (method, path) == ("GET", "/associations")
        return {"cluster": "lab", "associations": view(parse_accounts(TREE, root_user=True))}


@pytest.fixture
def out(monkeypatch, capsys):
    monkeypatch.setattr(sacctmgr, "Client", FakeClient)

    def run(*argv):
        code = sacctmgr.main(list(argv))
        got = capsys.readouterr()
        return code, got.out, got.err
    return run


def test_snakemake_plugins_account_check(out):
    # snakemake_executor_plugin_slurm/accounts.py: sacctmgr -n -s list user "$USER" format=account%256
    code, text, err = out("-n", "-s", "list", "user", "ann", "format=account%256")
    assert code == 0 and err == ""
    assert all(len(line) == 257 for line in text.splitlines())
    assert {line.strip().lower() for line in text.split("\n") if line} == {"research", "ml"}


def test_list_user_default_columns_and_parsable_forms(out):
    code, text, _ = out("show", "user")
    assert text.splitlines() == ["      User   Def Acct     Admin ", "---------- ---------- --------- ",
                                 "       ann   research      None ", "      root       root Administ+ "]
    assert out("-P", "-n", "list", "user", "ann", "format=user,defaultaccount")[1] == "ann|research\n"
    assert out("-p", "list", "assoc", "users=ann", "format=acct,user,share")[1] == \
        "Account|User|Share|\nresearch|ann|1|\nml|ann|1|\n"


def test_list_account_withassoc_and_an_unknown_field(out):
    text = out("-P", "list", "account", "ml", "withassoc", "format=account,parentname,user,share,org")[1]
    assert text == "Account|ParentName|User|Share|Org\nml|research||4|research\nml||ann|1|research\n"
    assert out("list", "user", "format=bogus") == (1, "", "Unknown field 'bogus'\n")
    assert out("list", "nothing")[0] == 1


def test_adding_a_user_unix_does_not_know_asks_first_and_no_sends_nothing(out, monkeypatch):
    import os
    read, write = os.pipe()
    os.write(write, b"n\n")
    os.close(write)
    monkeypatch.setattr("sys.stdin", os.fdopen(read))
    code, text, err = out("add", "user", "msl-no-such-user", "account=ml")  # FakeClient refuses any POST
    assert code == 1 and text.startswith("There is no uid for user 'msl-no-such-user'\n"
                                         "Are you sure you want to continue? (You have 30 seconds to decide)\n")
    assert "Adding User(s)" not in text
