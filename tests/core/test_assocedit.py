"""sacctmgr's add/modify/delete as edits of the association tree (minislurm/core/assocedit.py),
and accounts.conf written back (render_accounts) as the same tree."""

from __future__ import annotations

import shlex

from minislurm.core.accounts import parse_accounts, render_accounts
from minislurm.core.assocedit import plan

BASE = "Account=research Fairshare=3\nAccount=eval\nUser=ann Account=research\nUser=ann Account=eval\n"


def run(text: str, command: str):
    return plan(parse_accounts(text), shlex.split(command), "lab")


def test_render_reads_back_as_the_same_tree():
    text = (BASE + "Account=ml Parent=research Fairshare=5 Description='deep learning' Organization=cs\n"
            "User=bob Account=ml AdminLevel=Operator\nUser=bob Account=eval DefaultAccount=eval\n")
    tree = parse_accounts(text)
    again = parse_accounts(render_accounts(tree))
    assert {k: (a.parent, a.shares, a.description, a.organization) for k, a in again.nodes.items()} == \
        {k: (a.parent, a.shares, a.description, a.organization) for k, a in tree.nodes.items()}
    assert again.accounts_of("bob") == ["eval", "ml"] and again.operators() == {"bob"}


def test_add_account_and_user_with_slurms_words_and_abbreviations():
    edit = run(BASE, "add acc ML parent=research fairshare=7")
    assert edit.changed and not edit.failed and edit.out[:2] == [" Adding Account(s)", "  ml"]
    assert edit.tree.nodes[("ml", None)].parent == "research" and edit.tree.nodes[("ml", None)].shares == 7
    edit = plan(edit.tree, ["add", "u", "carol", "account=ml,eval", "defaultaccount=eval"], "lab")
    assert edit.tree.accounts_of("carol") == ["eval", "ml"]
    assert "  U = carol     A = ml         C = lab       " in edit.out and "  Default Account = eval" in edit.out


def test_add_refuses_what_sacctmgr_refuses():
    edit = run(BASE, "add user carol account=nope")
    assert edit.failed and not edit.changed and "This account 'nope' doesn't exist." in edit.err[0]
    assert run(BASE, "add user ann account=research").out == [" Nothing new added."]
    assert run(BASE, "add account x parent=nope").failed
    assert run(BASE, "add user carol").err == [" Need name of account to add user to."]


def test_modify_default_account_needs_an_association_and_admin_level_makes_an_operator():
    edit = run(BASE, "modify user where name=ann set defaultaccount=ml")
    assert edit.failed and edit.out[0].startswith(" Can't modify because these users aren't associated")
    edit = run(BASE, "modify user ann set defaultaccount=eval adminlevel=operator")
    assert edit.changed and edit.tree.accounts_of("ann") == ["eval", "research"] and edit.tree.operators() == {"ann"}


def test_modify_account_parent_may_not_make_a_loop():
    tree = run(BASE, "add account ml parent=research").tree
    edit = plan(tree, shlex.split("modify account research set parent=ml"), "lab")
    assert edit.failed and not edit.changed
    edit = plan(tree, shlex.split("modify account where name=ml set parent=eval"), "lab")
    assert edit.changed and edit.tree.nodes[("ml", None)].parent == "eval"


def test_delete_keeps_a_users_default_while_they_keep_other_associations():
    edit = run(BASE, "delete user ann where account=research")
    assert edit.failed and "You can not remove the default account of a user" in edit.err[0]
    edit = run(BASE, "delete user ann where account=eval")
    assert edit.changed and edit.tree.accounts_of("ann") == ["research"]
    assert run(BASE, "delete account research").failed  # her default, and she keeps eval
    edit = run(BASE, "delete account eval")
    assert edit.changed and edit.tree.accounts_of("ann") == ["research"] and ("eval", None) not in edit.tree.nodes
    edit = run(BASE, "delete user ann")
    assert edit.changed and edit.out == [" Deleting users...", "  ann"] and not edit.tree.accounts_of("ann")
    assert run(BASE, "delete account root").failed and run(BASE, "delete user").failed
