"""Accounts file, decayed usage, classic fair share and Fair Tree (reference section 3.2)."""

from __future__ import annotations

import math

import pytest

from minislurm.core.accounts import AccountsError, parse_accounts
from minislurm.core.states import JobState
from minislurm.sched import fairshare, priority
from minislurm.sched.fairshare import UsageLedger, share_rows

DAY = 86400.0


def ledger_with(text: str, usage: dict[tuple[str, str], float], half_life: float = math.inf):
    tree = parse_accounts(text)
    ledger = UsageLedger(tree, half_life)
    for (account, user), amount in usage.items():
        ledger.charge(user, account, amount, 0.0)
    return tree, ledger


# -- the accounts file -------------------------------------------------------------------

def test_parse_builds_the_tree_with_default_fairshare_one():
    tree = parse_accounts(
        "# research gets more\n"
        "Account=research Fairshare=60\n"
        "account=nlp parent=research   # keys are case-insensitive\n"
        "Account=eval\n"
        "\n"
        "User=alice Account=nlp Fairshare=3\n"
        "User=bob Account=eval\n"
    )
    root = tree.root
    assert [(c.account, c.user, c.shares) for c in root.children] == [("research", None, 60), ("eval", None, 1)]
    research = tree.nodes[("research", None)]
    assert [(c.account, c.parent, c.shares) for c in research.children] == [("nlp", "research", 1)]
    assert [(c.key, c.parent, c.shares) for c in tree.nodes[("nlp", None)].children] == [(("nlp", "alice"), "nlp", 3)]
    assert tree.nodes[("eval", "bob")].shares == 1
    assert sorted(a.key for a in tree.users()) == [("eval", "bob"), ("nlp", "alice")]


def test_user_line_for_an_unknown_account_creates_it_under_root():
    tree = parse_accounts("User=carol Account=newacct Fairshare=2\n")
    assert [(c.account, c.user, c.shares) for c in tree.root.children] == [("newacct", None, 1)]
    assert tree.nodes[("newacct", "carol")].shares == 2


@pytest.mark.parametrize("text, message", [
    ("Account=a\nAccount b\n", "accounts.conf line 2: expected Key=Value, got 'Account'"),
    ("\n# c\nAccount=a Fairshare=lots\n", "accounts.conf line 3: Fairshare must be a whole number"),
    ("User=alice\n", "accounts.conf line 1: User line needs Account="),
    ("Account=a\nFairshare=5\n", "accounts.conf line 2: expected Account= or User="),
    ("Account=a\nAccount=b Parent=nope\n",
     "accounts.conf line 2: parent account 'nope' of 'b' does not exist"),
    ("Account=a\nAccount=a Fairshare=5\n", "accounts.conf line 2: account 'a' already exists"),
    ("Account=root\n", "accounts.conf line 1: account 'root' already exists"),
    ("User=u Account=a\nAccount=a Parent=root\n", "accounts.conf line 2: account 'a' already exists"),
    ("User=u Account=a\n\nUser=u Account=a\n", "accounts.conf line 3: user 'u' is already in account 'a'"),
    ("User=u Account=a AdminLevel=boss\n",
     "accounts.conf line 1: AdminLevel must be None, Operator or Administrator, not 'boss'"),
])
def test_parse_errors_name_the_line(text, message):
    with pytest.raises(AccountsError) as err:
        parse_accounts(text)
    assert str(err.value) == message


def test_admin_levels_make_operators():
    tree = parse_accounts("User=teacher Account=staff AdminLevel=Operator\nUser=head Account=staff AdminLevel=admin\n"
                          "User=alice Account=class\nUser=bob Account=class AdminLevel=None\n")
    assert tree.operators() == {"teacher", "head"}
    assert tree.nodes[("class", "alice")].admin == "None"


def test_parse_error_uses_the_given_path():
    with pytest.raises(AccountsError, match=r"^/etc/acct line 1: expected Account= or User=$"):
        parse_accounts("Foo=bar\n", path="/etc/acct")


# -- usage and decay ---------------------------------------------------------------------

TREE = "Account=phys Fairshare=3\nAccount=chem\nUser=alice Account=phys\nUser=bob Account=phys\nUser=carol Account=chem\n"


def test_charging_a_user_charges_every_ancestor():
    tree, ledger = ledger_with("Account=a\nAccount=b Parent=a\nUser=u Account=b\nUser=v Account=a\n",
                               {("b", "u"): 100.0, ("a", "v"): 10.0})
    assert ledger.usage(("b", "u")) == 100.0
    assert ledger.usage(("b", None)) == 100.0
    assert ledger.usage(("a", "v")) == 10.0
    assert ledger.usage(("a", None)) == 110.0
    assert ledger.usage(("root", None)) == 110.0


def test_usage_halves_every_half_life():
    tree, ledger = ledger_with(TREE, {("phys", "alice"): 1000.0}, half_life=DAY)
    ledger.decay_to(0.0)
    assert ledger.usage(("phys", "alice")) == 1000.0
    ledger.decay_to(DAY)
    assert ledger.usage(("phys", "alice")) == 500.0
    assert ledger.usage(("root", None)) == 500.0
    ledger.decay_to(2 * DAY)
    assert ledger.usage(("phys", "alice")) == 250.0
    ledger.decay_to(DAY)  # time never runs backwards
    assert ledger.usage(("phys", "alice")) == 250.0


def test_new_charges_add_to_decayed_usage():
    tree, ledger = ledger_with(TREE, {("phys", "alice"): 1000.0}, half_life=DAY)
    ledger.charge("alice", "phys", 100.0, DAY)
    assert ledger.usage(("phys", "alice")) == 600.0
    ledger.decay_to(2 * DAY)
    assert ledger.usage(("phys", "alice")) == 300.0


def test_reading_factors_or_rows_never_changes_the_ledger():
    """sched takes nothing it mutates (issue 23 item 5): a look far ahead leaves the usage that a
    later, earlier look sees, and sshare's rows at a time show the usage decayed to it."""
    tree, ledger = ledger_with(TREE, {("phys", "alice"): 1000.0, ("chem", "carol"): 10.0}, half_life=DAY)
    before = fairshare.factors(tree, ledger, 100.0)
    fairshare.factors(tree, ledger, 10_000 * DAY)
    rows = {(r.account, r.user): r.raw_usage for r in share_rows(tree, ledger, DAY)}
    assert rows[("phys", "alice")] == 500.0 and ledger.usage(("phys", "alice")) == 1000.0
    assert fairshare.factors(tree, ledger, 100.0) == before
    assert ledger.at(2 * DAY).usage(("phys", "alice")) == 250.0 and ledger.usage(("phys", "alice")) == 1000.0


@pytest.mark.parametrize("half_life", [math.inf, 0.0])
def test_infinite_or_zero_half_life_means_no_decay(half_life):
    tree, ledger = ledger_with(TREE, {("phys", "alice"): 1000.0}, half_life=half_life)
    ledger.decay_to(365 * DAY)
    assert ledger.usage(("phys", "alice")) == 1000.0


# -- classic (PriorityFlags=NO_FAIR_TREE) ------------------------------------------------

def classic(text, usage):
    tree, ledger = ledger_with(text, usage)
    return fairshare.factors(tree, ledger, 0.0, fair_tree=False)


def test_classic_normalised_shares_follow_the_documented_machine_split():
    # classic_fair_share.html: accounts A-D, A split into A1-A4; ten equal users of A3 get 1% each.
    text = ("Account=A Fairshare=40\nAccount=B Fairshare=30\nAccount=C Fairshare=20\nAccount=D Fairshare=10\n"
            + "".join(f"Account=A{i} Parent=A\n" for i in range(1, 5))
            + "".join(f"User=u{i} Account=A3\n" for i in range(10)))
    tree, ledger = ledger_with(text, {})
    rows = {(r.account, r.user): r for r in share_rows(tree, ledger, 0.0, fair_tree=False)}
    assert rows[("A", None)].norm_shares == 0.4
    assert rows[("A3", None)].norm_shares == 0.1
    assert [rows[("A3", f"u{i}")].norm_shares for i in range(10)] == [pytest.approx(0.01)] * 10


def test_classic_flat_user_who_used_exactly_their_share_gets_one_half():
    f = classic("User=u1 Account=root\nUser=u2 Account=root Fairshare=3\n",
                {("root", "u1"): 25.0, ("root", "u2"): 75.0})
    assert f == {("root", "u1"): 0.5, ("root", "u2"): 0.5}


def test_classic_flat_factor_is_two_to_minus_usage_over_shares():
    f = classic("User=u1 Account=root\nUser=u2 Account=root\n", {("root", "u1"): 75.0, ("root", "u2"): 25.0})
    assert f[("root", "u1")] == 2 ** (-0.75 / 0.5)
    assert f[("root", "u2")] == 2 ** (-0.25 / 0.5)


def test_classic_no_usage_at_all_gives_everyone_one():
    assert set(classic(TREE, {}).values()) == {1.0}


def test_classic_hierarchy_uses_effective_usage():
    # total 40: phys used 30 (UA 0.75), chem 10 (0.25).  Under root UE = UA.
    # alice: UA .75, UE = .75 + (.75 - .75) * 1/2 = .75,  S = 3/4 * 1/2 = .375 -> 2**-2
    # bob:   UA 0,   UE = 0 + (.75 - 0) * 1/2 = .375,      S = .375           -> 2**-1
    # carol: UA .25, UE = .25 + (.25 - .25) * 1/1 = .25,   S = 1/4            -> 2**-1
    f = classic(TREE, {("phys", "alice"): 30.0, ("chem", "carol"): 10.0})
    assert f == {("phys", "alice"): 0.25, ("phys", "bob"): 0.5, ("chem", "carol"): 0.5}


def test_classic_share_rows_show_product_shares_and_effective_usage():
    tree, ledger = ledger_with(TREE, {("phys", "alice"): 30.0, ("chem", "carol"): 10.0})
    rows = share_rows(tree, ledger, 0.0, fair_tree=False)
    assert [(r.account, r.user, r.raw_shares, r.norm_shares, r.raw_usage, r.effective_usage) for r in rows] == [
        ("phys", None, 3, 0.75, 30.0, 0.75),
        ("phys", "alice", 1, 0.375, 30.0, 0.75),
        ("phys", "bob", 1, 0.375, 0.0, 0.375),
        ("chem", None, 1, 0.25, 10.0, 0.25),
        ("chem", "carol", 1, 0.25, 10.0, 0.25),
    ]
    assert [r.fairshare for r in rows if r.user] == [0.25, 0.5, 0.5]
    assert all(math.isnan(r.fairshare) for r in rows if r.user is None)


# -- Fair Tree (the default) -------------------------------------------------------------

FT_TREE = ("Account=A\nAccount=B\n"
           "User=a1 Account=A\nUser=a2 Account=A\nUser=b1 Account=B\nUser=b2 Account=B\n")
FT_USAGE = {("A", "a1"): 9.0, ("A", "a2"): 1.0, ("B", "b2"): 30.0}


def fair_tree(text, usage):
    tree, ledger = ledger_with(text, usage)
    return fairshare.factors(tree, ledger, 0.0)


def test_fair_tree_all_children_of_a_higher_account_beat_all_of_a_lower_one():
    # root: A S=.5 U=10/40 -> LF 2;  B S=.5 U=30/40 -> LF 2/3.  A's subtree is ranked first.
    # A: a2 LF .5/.1 = 5, a1 .5/.9;  B: b1 no usage (LF inf), b2 .5/1.
    # Even b1, who never ran anything, ranks below a1, the heaviest user of A.
    f = fair_tree(FT_TREE, FT_USAGE)
    assert f == {("A", "a2"): 1.0, ("A", "a1"): 0.75, ("B", "b1"): 0.5, ("B", "b2"): 0.25}


def test_fair_tree_no_usage_sorts_first_and_sibling_users_that_tie_share_a_rank():
    text = "User=x Account=root\nUser=y Account=root\nUser=z Account=root Fairshare=2\nUser=w Account=root\n"
    # x, y: no usage -> LF inf (tie, rank 4);  z: S .4, U .5 -> .8;  w: S .2, U .5 -> .4
    f = fair_tree(text, {("root", "z"): 10.0, ("root", "w"): 10.0})
    assert f == {("root", "x"): 1.0, ("root", "y"): 1.0, ("root", "z"): 0.5, ("root", "w"): 0.25}


def test_fair_tree_user_tied_with_an_account_shares_its_top_users_rank():
    # u (user) and X (account) both have no usage (LF inf): X's best users get u's rank.
    # Y: S 2/4, U 1 -> .5; its users tie (LF 1 each) at the next free rank, 2 of 5.
    text = ("User=u Account=root\nAccount=X\nAccount=Y Fairshare=2\n"
            "User=x1 Account=X\nUser=x2 Account=X\nUser=y1 Account=Y\nUser=y2 Account=Y\n")
    f = fair_tree(text, {("Y", "y1"): 5.0, ("Y", "y2"): 5.0})
    assert f == {("root", "u"): 1.0, ("X", "x1"): 1.0, ("X", "x2"): 1.0, ("Y", "y1"): 0.4, ("Y", "y2"): 0.4}


def test_fair_tree_tied_accounts_merge_children_each_keeping_its_own_level_fairshare():
    # A and B: S .5, U .5 -> LF 1 each, so their children are sorted together, but each
    # child's LF is still computed against its own siblings: a1 1/1 = 1, b1 .5/.2 = 2.5,
    # b2 .5/.8 = .625.
    text = "Account=A\nAccount=B\nUser=a1 Account=A\nUser=b1 Account=B\nUser=b2 Account=B\n"
    f = fair_tree(text, {("A", "a1"): 10.0, ("B", "b1"): 2.0, ("B", "b2"): 8.0})
    assert f == {("B", "b1"): 1.0, ("A", "a1"): 2 / 3, ("B", "b2"): 1 / 3}


def test_fair_tree_zero_shares_rank_last_even_without_usage():
    # Slurm: S == 0 gives LF 0, the lowest value, whatever the usage.
    f = fair_tree("User=a Account=root Fairshare=0\nUser=b Account=root\n", {("root", "b"): 5.0})
    assert f == {("root", "b"): 1.0, ("root", "a"): 0.5}


def test_fair_tree_share_rows_show_level_shares_and_usage_relative_to_parent():
    tree, ledger = ledger_with(FT_TREE, FT_USAGE)
    rows = share_rows(tree, ledger, 0.0)
    assert [(r.account, r.user, r.raw_shares, r.norm_shares, r.raw_usage, r.effective_usage) for r in rows] == [
        ("A", None, 1, 0.5, 10.0, 0.25),
        ("A", "a1", 1, 0.5, 9.0, 0.9),
        ("A", "a2", 1, 0.5, 1.0, 0.1),
        ("B", None, 1, 0.5, 30.0, 0.75),
        ("B", "b1", 1, 0.5, 0.0, 0.0),
        ("B", "b2", 1, 0.5, 30.0, 1.0),
    ]
    assert [r.fairshare for r in rows if r.user] == [0.75, 1.0, 0.5, 0.25]
    assert all(math.isnan(r.fairshare) for r in rows if r.user is None)


# -- end to end --------------------------------------------------------------------------

def test_under_served_user_starts_first_with_only_the_fairshare_weight(lab):
    c = lab(nodes=1, gpus=4)
    c.state.config.priority.weight_fairshare = 10_000
    tree = parse_accounts("Account=lab\nUser=old Account=lab\nUser=recent Account=lab\n")
    ledger = UsageLedger(tree, half_life=DAY)
    ledger.charge("old", "lab", 1000.0, 0.0)  # more raw usage, but long ago: 250 after 2 days
    ledger.charge("recent", "lab", 400.0, 2 * DAY)
    now = 2 * DAY
    fs = fairshare.factors(tree, ledger, now)
    assert fs == {("lab", "old"): 1.0, ("lab", "recent"): 0.5}

    first = c.submit(now, gpus=4, user="recent", account="lab")  # FIFO would pick this one
    second = c.submit(now, gpus=4, user="old", account="lab")
    c.state.set_priorities(priority.recompute(c.state, now, fs))
    assert (first.priority, second.priority) == (5000, 10_000)
    c.run(now)
    assert second.state is JobState.RUNNING and first.state is JobState.PENDING
    assert c.reason(first) == "Resources"
