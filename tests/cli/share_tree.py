"""An account tree with usage, for the sshare format tests."""

from minislurm.core.accounts import parse_accounts
from minislurm.sched.fairshare import UsageLedger, share_rows

SHARES = """\
Account=research Fairshare=60
Account=eval Fairshare=40
Account=vision Parent=research Fairshare=1
User=alice Account=research Fairshare=1
User=bob Account=research Fairshare=1
User=carol Account=eval
User=dan Account=vision
"""


def tree_and_rows():
    tree = parse_accounts(SHARES)
    ledger = UsageLedger(tree, half_life=0)
    ledger.charge("alice", "research", 7200, 0)
    ledger.charge("bob", "research", 3600, 0)
    ledger.charge("carol", "eval", 1800, 0)
    parents = {a.account: a.parent for a in tree.nodes.values() if a.user is None}
    return share_rows(tree, ledger, 0), parents
