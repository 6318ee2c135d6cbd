"""sacctmgr's changes on the controller in-process (fake clock): with ``commit`` they are in
accounts.conf on disk when ``change`` returns (commit, then tell) and enforced at once
(``AccountingStorageEnforce=associations``, AdminLevel); without it nothing is written."""

from __future__ import annotations

import pytest
from ctldkit import run

from minislurm.core.accounts import parse_accounts
from minislurm.core.errors import SlurmError
from minislurm.ctld.associations import change

ENFORCE = {"accounting_enforce": frozenset({"associations"})}


def test_a_committed_change_is_on_disk_when_told_and_enforced_at_once(tmp_path):
    async def test(h):
        path = tmp_path / "accounts.conf"
        path.write_text("Account=research\nUser=ann Account=research\n")
        h.ctl.accounts_file = path
        with pytest.raises(SlurmError, match="Invalid account"):
            await h.submit("ann", account="ml", hold=True)
        dry = change(h.ctl, ["add", "account", "ml"], commit=False)
        assert dry["changed"] and parse_accounts(path.read_text()).accounts_of("ann") == ["research"]
        assert change(h.ctl, ["add", "account", "ml", "fairshare=4"], commit=True)["changed"]
        told = change(h.ctl, ["add", "user", "ann", "account=ml", "adminlevel=operator"], commit=True)
        assert told["changed"] and not told["failed"]
        on_disk = parse_accounts(path.read_text())  # what a restarted controller reads
        assert on_disk.accounts_of("ann") == ["research", "ml"] and on_disk.nodes[("ml", None)].shares == 4
        job = await h.submit("ann", account="ml", hold=True)
        assert h.job(job).account == "ml" and "ann" in h.ctl.operators
        book = h.ctl.fairshare.tree  # fair share weighs the new account at once (the lab runs multifactor)
        assert ("ml", "ann") in book.nodes and book.nodes[("ml", None)].shares == 4
    run(test, tmp_path, **ENFORCE)
