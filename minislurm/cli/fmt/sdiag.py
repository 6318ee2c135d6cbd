"""sdiag's report, laid out as Slurm 22.05 prints it (recorded on the twin: tests/live/sessions)."""

from __future__ import annotations

import pwd
import time

RULE = "*" * 55
SORTS = {"count": lambda r: -r["count"], "id": lambda r: r["id"], "time": lambda r: -r["total_us"],
         "time2": lambda r: -(r["total_us"] // max(1, r["count"]))}


def _when(epoch: float) -> str:
    return f"{time.strftime('%a %b %d %H:%M:%S %Y', time.localtime(epoch))} ({int(epoch)})"


def _uid(user: str) -> int:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return 0


def format_sdiag(d: dict, sort: str = "count") -> str:
    jobs, main, bf = d["jobs"], d["main"], d["backfill"]
    minutes = (d["now"] - d["since"]) / 60
    out = [RULE, f"sdiag output at {_when(d['now'])}", f"Data since      {_when(d['since'])}", RULE,
           f"Server thread count:  {d['server_threads']}", "Agent queue size:     0",
           f"Agent count:          {d['agent_count']}", f"Agent thread count:   {d['agent_count']}",
           "DBD Agent queue size: 0", "",
           f"Jobs submitted: {jobs['submitted']}", f"Jobs started:   {jobs['started']}",
           f"Jobs completed: {jobs['completed']}", f"Jobs canceled:  {jobs['canceled']}",
           f"Jobs failed:    {jobs['failed']}", "",
           f"Job states ts:  {_when(d['now'])}", f"Jobs pending:   {jobs['pending']}",
           f"Jobs running:   {jobs['running']}", "",
           "Main schedule statistics (microseconds):",
           f"\tLast cycle:   {main['last_us']}", f"\tMax cycle:    {main['max_us']}",
           f"\tTotal cycles: {main['count']}"]
    if main["count"]:
        out += [f"\tMean cycle:   {main['total_us'] // main['count']}",
                f"\tMean depth cycle:  {main['depth_total'] // main['count']}"]
        if minutes > 1:
            out.append(f"\tCycles per minute: {int(main['count'] / minutes)}")
    out += [f"\tLast queue length: {main['last_queue']}", "", "Backfilling stats",
            f"\tTotal backfilled jobs (since last slurm start): {bf['backfilled_ever']}",
            f"\tTotal backfilled jobs (since last stats cycle start): {bf['backfilled']}",
            "\tTotal backfilled heterogeneous job components: 0", f"\tTotal cycles: {bf['count']}"]
    if bf["last_when"] is not None:
        out.append(f"\tLast cycle when: {_when(bf['last_when'])}")
    out += [f"\tLast cycle: {bf['last_us']}", f"\tMax cycle:  {bf['max_us']}"]
    n = bf["count"]
    if n:
        out.append(f"\tMean cycle: {bf['total_us'] // n}")
    out += [f"\tLast depth cycle: {bf['last_depth']}", f"\tLast depth cycle (try sched): {bf['last_depth']}"]
    if n:
        out += [f"\tDepth Mean: {bf['depth_total'] // n}", f"\tDepth Mean (try depth): {bf['depth_total'] // n}"]
    out.append(f"\tLast queue length: {bf['last_queue']}")
    if n:
        out.append(f"\tQueue length mean: {bf['queue_total'] // n}")
    out.append(f"\tLast table size: {bf['last_table']}")
    if n:
        out.append(f"\tMean table size: {bf['table_total'] // n}")
    out += ["", f"Latency for 1000 calls to gettimeofday(): {d['latency_us']} microseconds", "",
            "Remote Procedure Call statistics by message type"]
    for r in sorted(d["rpcs"], key=SORTS[sort]):
        out.append(f"\t{r['name']:<40}({r['id']:5d}) count:{r['count']:<6d} "
                   f"ave_time:{r['total_us'] // max(1, r['count']):<6d} total_time:{r['total_us']}")
    out += ["", "Remote Procedure Call statistics by user"]
    for r in sorted(d["users"], key=SORTS["count" if sort == "id" else sort]):
        out.append(f"\t{r['user']:<16}({_uid(r['user']):8d}) count:{r['count']:<6d} "
                   f"ave_time:{r['total_us'] // max(1, r['count']):<6d} total_time:{r['total_us']}")
    out += ["", "Pending RPC statistics", "\tNo pending RPCs"]
    return "\n".join(out) + "\n"
