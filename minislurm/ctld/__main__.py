"""``python -m minislurm.ctld``: run the controller daemon in the foreground.

It reads slurm.conf (``--conf`` or ``$SLURM_CONF``), takes its address from SlurmctldHost and
SlurmctldPort, its JWT key from ``AuthAltParameters=jwt_key=...`` and its state directory from
StateSaveLocation, then serves until SIGTERM/SIGINT.  An ``accounts.conf`` beside slurm.conf
(what slurmdbd's associations hold for real Slurm) gives the fair-share tree and the users whose
AdminLevel makes them operators; it is read when the controller starts (a broken one stops it) and
again whenever it changes (so `cluster add-users` needs no restart); `sacctmgr add|modify|delete`
requests are written to it by the controller itself (minislurm.ctld.associations).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import os
import sys
from pathlib import Path

from aiohttp import web

from minislurm.common.auth import Signer, load_key
from minislurm.common.settings import ctld_settings
from minislurm.core.accounts import AccountsError, parse_accounts
from minislurm.core.slurmconf import load
from minislurm.ctld.api import make_app
from minislurm.ctld.controller import Controller
from minislurm.lifecycle import until_stopped


async def serve(conf: Path, port: int | None = None, ready_file: Path | None = None,
                exit_with_parent: bool = False) -> None:
    cfg = load(conf)
    settings = ctld_settings(cfg, conf)
    accounts = conf.resolve().parent / "accounts.conf"
    try:
        admins = parse_accounts(accounts.read_text(), str(accounts)).operators() if accounts.exists() else set()
    except AccountsError as exc:
        raise SystemExit(f"slurmctld: fatal: {exc}") from None
    # As root, the agents run each job as its user (and refuse one they do not know); a
    # personal cluster runs every job as its owner, whatever name a token gives.
    ctl = Controller(cfg, settings.state_dir, Signer(load_key(settings.key_file)),
                     operators=settings.operators | {getpass.getuser()} | admins, accounts_file=accounts,
                     check_users=os.geteuid() == 0, super_users=settings.operators)
    await ctl.start()
    runner = web.AppRunner(make_app(ctl), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, settings.bind, port if port is not None else settings.port, reuse_address=True)
    await site.start()
    actual = site._server.sockets[0].getsockname()[1]
    logging.getLogger("minislurm.ctld").info("slurmctld listening on %s:%s", settings.bind, actual)
    if ready_file:
        ready_file.write_text(f"{settings.bind}:{actual}\n")
    await until_stopped(exit_with_parent)
    await runner.cleanup()
    await ctl.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="slurmctld", description="minislurm controller daemon")
    p.add_argument("--conf", default=os.environ.get("SLURM_CONF"), help="slurm.conf")
    p.add_argument("--port", type=int, help="override SlurmctldPort (0: any free port)")
    p.add_argument("--ready-file", type=Path, help="write host:port here once serving")
    p.add_argument("--log-file")
    p.add_argument("--exit-with-parent", action="store_true",
                   help="also stop when the process that started this one ends")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    if not args.conf:
        print("slurmctld: error: no slurm.conf (use --conf or set SLURM_CONF)", file=sys.stderr)
        return 1
    logging.basicConfig(filename=args.log_file, level=logging.DEBUG if args.verbose else logging.INFO,
                        format="[%(asctime)s] %(levelname)s: %(message)s")
    asyncio.run(serve(Path(args.conf), args.port, args.ready_file, args.exit_with_parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
