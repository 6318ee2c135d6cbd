"""sacctmgr: view the associations (users, accounts) and, for operators, add, modify and delete them.

``show``/``list`` ``user``, ``account`` and ``association`` read the controller's associations
and print them as sacctmgr 22.05 does (``format=``, ``where`` conditions, ``withassoc``/``-s``,
``-n``, ``-p``, ``-P``).  ``add``, ``modify`` and ``delete`` of ``user`` and ``account`` say what
they will change, ask (unless ``-i``) and send the change to the controller, which refuses anyone
but an operator and writes it to accounts.conf before it answers
(:mod:`minislurm.ctld.associations`).
"""

from __future__ import annotations

import select
import sys

from minislurm.cli.fmt.sacctmgr import FormatError, fields, table
from minislurm.cli.helptext import LAYOUTS
from minislurm.cli.parsing import ArgumentParser
from minislurm.client import Client, ClientError
from minislurm.core.accounts import AccountsError, AssociationTree
from minislurm.core.assocedit import is_word, names, plan, split, verb_of

USER_FORMAT = "User,DefaultAccount,AdminLevel"
USER_ASSOC_FORMAT = "Cluster,Account,Partition,Share,Priority,MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,DefaultQOS"
ACCOUNT_FORMAT = "Account,Description,Organization"
ACCOUNT_ASSOC_FORMAT = ("Cluster,ParentName,User,Share,Priority,GrpJobs,GrpNodes,GrpCPUs,GrpMemory,GrpSubmit,"
                        "GrpWall,GrpCPUMins,MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,DefaultQOS")
ASSOC_FORMAT = ("Cluster,Account,User,Partition,Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,GrpTRESMins,"
                "MaxJobs,MaxTRES,MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,DefaultQOS,GrpTRESRunMins")
NO_SHOW_ENTITY = ("No valid entity in list command\nInput line must include \"Account\", \"Association\", "
                  "\"Cluster\", \"Configuration\",\n\"Event\", \"Federation\", \"Problem\", \"QOS\", \"Resource\", "
                  "\"Reservation\",\n\"RunAwayJobs\", \"Stats\", \"Transaction\", \"TRES\", \"User\", or \"WCKey\"")


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="sacctmgr", layout=LAYOUTS["sacctmgr"])
    p.add_argument("-i", "--immediate", action="store_true", help="commit changes without asking")
    p.add_argument("-n", "--noheader", action="store_true", help="leave out the header lines")
    p.add_argument("-o", "--oneliner", action="store_true", help="one record per line (they are)")
    p.add_argument("-p", "--parsable", action="store_true", help="fields split by '|', one at the end")
    p.add_argument("-P", "--parsable2", action="store_true", help="fields split by '|', none at the end")
    p.add_argument("-Q", "--quiet", action="store_true", help="print no messages, only errors")
    p.add_argument("-r", "--readonly", action="store_true", help="refuse to change anything")
    p.add_argument("-s", "--associations", action="store_true", help="list users and accounts with their "
                   "associations (the withassoc keyword)")
    p.add_argument("-v", "--verbose", action="store_true", help="say more")
    p.add_argument("words", nargs="*", help="the command")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    words = args.words
    if not words:
        print("sacctmgr: error: minislurm's sacctmgr takes one command on its command line "
              "(its interactive mode is not kept)", file=sys.stderr)
        return 1
    head = words[0]
    client = Client()
    try:
        if is_word(head, "show", 3) or is_word(head, "list", 3):
            return show(client, words[1:], args)
        if verb_of(head):
            if args.readonly:
                print("Can't run this command in readonly mode.", file=sys.stderr)
                return 1
            return edit(client, words, args)
        if is_word(head, "version", 4):
            from minislurm.cli.helptext import version_line
            print(version_line())
            return 0
        if is_word(head, "help", 2):
            sys.stdout.write(parser().format_help())
            return 0
        print(f"invalid keyword: {head}", file=sys.stderr)
        return 1
    except ClientError as exc:
        print(f"sacctmgr: error: {exc}", file=sys.stderr)
        return 1


# -- show ----------------------------------------------------------------------------------------
def _rows(reply: dict) -> list[dict]:
    return reply["associations"]


def tree_of(reply: dict) -> AssociationTree:
    """The controller's associations as a tree (for planning a change)."""
    tree = AssociationTree()
    for r in _rows(reply):
        if r["user"] is None and r["account"] != "root":
            a = tree.add_account(r["account"], r["parent"] or "root", r["shares"])
            a.description, a.organization = r["description"], r["organization"]
    for r in _rows(reply):
        if r["user"] is not None:
            tree.add_user(r["user"], r["account"], r["shares"]).admin = r["admin"] or "None"
            if r["default"]:
                tree.defaults[r["user"]] = r["account"]
    return tree


def _cells(r: dict, cluster: str, users: dict) -> dict:
    """A row's values by field kind."""
    account = r["account"]
    cell = {"cluster": cluster, "acct": account, "user": r["user"], "fairshare": r["shares"], "qos": "normal"}
    if r["user"] is None:
        cell["pname"] = r["parent"]
        cell["desc"] = r["description"] or ("default root account" if account == "root" else account)
        cell["org"] = r["organization"] or (account if r["parent"] in (None, "root") else r["parent"])
    else:
        cell.update(users[r["user"]])
    return cell


def _users(rows: list[dict]) -> dict:
    order = ("None", "Operator", "Administrator")
    out: dict = {}
    for r in rows:
        if r["user"] is None:
            continue
        u = out.setdefault(r["user"], {"user": r["user"], "admin": "None", "dacct": None})
        if order.index(r["admin"] or "None") > order.index(u["admin"]):
            u["admin"] = r["admin"]
        if r["default"]:
            u["dacct"] = r["account"]
    return out


class Conditions:
    def __init__(self):
        self.names: list[str] = []
        self.accounts: list[str] = []
        self.users: list[str] = []
        self.parents: list[str] = []
        self.defaults: list[str] = []
        self.levels: list[str] = []
        self.format: list[str] = []
        self.with_assoc = False
        self.only_defaults = False


def _conditions(words: list[str], entity: str) -> tuple[Conditions, list[str]]:
    c, bad = Conditions(), []
    for word in words:
        key, value = split(word)
        if value is None:
            if is_word(key, "where", 5) or is_word(key, "set", 3) or is_word(key, "Tree", 4) \
                    or is_word(key, "WithDeleted", 5) or is_word(key, "WOPLimits", 4) or is_word(key, "WOPInfo", 4):
                continue
            if entity != "assoc" and is_word(key, "WithAssoc", 5):
                c.with_assoc = True
                continue
            if entity == "assoc" and is_word(key, "OnlyDefaults", 2):
                c.only_defaults = True
                continue
            if entity == "assoc":
                bad.append(f" Unknown condition: {word}")
                continue
            c.names += names(key)
        elif is_word(key, "Format", 1):
            c.format += [f for f in value.split(",") if f]
        elif entity == "user" and (is_word(key, "Names", 1) or is_word(key, "Users", 1)):
            c.names += names(value)
        elif entity == "account" and (is_word(key, "Names", 1) or is_word(key, "Accounts", 1)
                                      or is_word(key, "Acct", 4)):
            c.names += names(value)
        elif entity == "user" and is_word(key, "AdminLevel", 2):
            c.levels += [v.capitalize() if v != "admin" else "Administrator" for v in names(value)]
        elif entity == "user" and is_word(key, "DefaultAccount", 8):
            c.defaults += names(value)
        elif is_word(key, "Accounts", 2) or is_word(key, "Acct", 4):
            c.accounts += names(value)
        elif is_word(key, "Users", 1):
            c.users += names(value)
        elif is_word(key, "Parents", 4):
            c.parents += names(value)
        elif is_word(key, "Clusters", 1) or is_word(key, "Partitions", 3):
            continue  # one cluster, no partition associations: every row matches
        else:
            bad.append(f" Unknown condition: {word}" + ("" if entity == "assoc" else
                                                         "\n Use keyword 'set' to modify value"))
    return c, bad


def show(client: Client, words: list[str], args) -> int:
    if not words:
        print(NO_SHOW_ENTITY, file=sys.stderr)
        return 1
    what = words[0]
    entity = ("account" if is_word(what, "Accounts", 2) or is_word(what, "Acct", 4) else
              "assoc" if is_word(what, "Associations", 2) else "user" if is_word(what, "Users", 1) else None)
    if entity is None:
        print(NO_SHOW_ENTITY, file=sys.stderr)
        return 1
    c, bad = _conditions(words[1:], entity)
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    c.with_assoc = c.with_assoc or args.associations
    reply = client.call("GET", "/associations")
    cluster, rows = reply["cluster"], _rows(reply)
    users = _users(rows)
    if entity == "user":
        spec = c.format or (USER_FORMAT + ("," + USER_ASSOC_FORMAT if c.with_assoc else "")).split(",")
        picked = [r for r in rows if r["user"] is not None and (not c.names or r["user"] in c.names)
                  and (not c.accounts or r["account"] in c.accounts) and (not c.parents or r["account"] in c.parents)
                  and (not c.defaults or users[r["user"]]["dacct"] in c.defaults)
                  and (not c.levels or users[r["user"]]["admin"] in c.levels)]
        if c.with_assoc:
            out = [_cells(r, cluster, users) for r in sorted(picked, key=lambda r: r["user"])]
        else:
            out = [users[u] for u in sorted({r["user"] for r in picked})]
    elif entity == "account":
        spec = c.format or (ACCOUNT_FORMAT + ("," + ACCOUNT_ASSOC_FORMAT if c.with_assoc else "")).split(",")
        accounts = {r["account"]: r for r in rows if r["user"] is None}
        chosen = sorted(a for a in accounts if (not c.names or a in c.names)
                        and (not c.parents or accounts[a]["parent"] in c.parents))
        if c.with_assoc:
            out = [{**_cells(r, cluster, users), **{k: v for k, v in _cells(accounts[a], cluster, users).items()
                                                    if k in ("desc", "org")}}
                   for a in chosen for r in rows if r["account"] == a and (not c.users or r["user"] in c.users)]
        else:
            out = [_cells(accounts[a], cluster, users) for a in chosen]
    else:
        spec = c.format or ASSOC_FORMAT.split(",")
        out = [_cells(r, cluster, users) for r in rows
               if (not c.accounts or r["account"] in c.accounts) and (not c.users or r["user"] in c.users)
               and (not c.parents or r["parent"] in c.parents)
               and (not c.only_defaults or r["user"] is None or r["default"])]
    try:
        columns = fields(spec)
    except FormatError as exc:
        print(exc, file=sys.stderr)
        return 1
    sys.stdout.write(table(columns, out, header=not args.noheader, parsable=args.parsable and not args.parsable2,
                           parsable2=args.parsable2))
    return 0


# -- add, modify, delete ---------------------------------------------------------------------------
def commit_check(question: str) -> bool:
    """sacctmgr's question, answered within 30 seconds: y commits; anything else, or none, not."""
    print(f"{question} (You have 30 seconds to decide)")
    print("(N/y): ", end="", flush=True)
    ready = select.select([sys.stdin], [], [], 30)[0] if sys.stdin and not sys.stdin.closed else []
    if not ready:
        print("timeout")
        return False
    answer = sys.stdin.readline()
    print()
    return answer[:1] in ("y", "Y")


def _known(user: str) -> bool:
    import pwd
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False


def edit(client: Client, words: list[str], args) -> int:
    verb = verb_of(words[0])
    reply = client.call("GET", "/associations")
    try:
        local = plan(tree_of(reply), words, reply["cluster"])
    except AccountsError as exc:
        print(exc, file=sys.stderr)
        return 1
    if local.err:
        print("\n".join(local.err), file=sys.stderr)
    if local.failed or not local.changed:
        if local.out:
            print("\n".join(local.out))
        return 1
    if not args.immediate:
        for user in local.new_users:  # as sacctmgr asks where it finds no such Unix user
            if not _known(user) and not commit_check(f"There is no uid for user '{user}'\n"
                                                     "Are you sure you want to continue?"):
                return 1
        for question in local.ask:
            if not commit_check(question):
                print("Aborted")
                return 0
    if verb == "add":
        print("\n".join(local.out))
    try:
        answer = client.call("POST", "/associations", {"words": words, "commit": args.immediate})
    except ClientError as exc:
        problem = f"Problem {local.verb}" if local.verb else "Error with request"
        print(f" {problem}: {exc}", file=sys.stderr)
        return 1
    if verb != "add" and answer["out"]:
        print("\n".join(answer["out"]))
    if answer["err"]:
        print("\n".join(answer["err"]), file=sys.stderr)
    if answer["failed"] or not answer["changed"]:
        return 1
    if args.immediate:
        return 0
    if not commit_check("Would you like to commit changes?"):
        print(" Changes Discarded")
        return 0
    answer = client.call("POST", "/associations", {"words": words, "commit": True})
    if answer["err"]:
        print("\n".join(answer["err"]), file=sys.stderr)
    return 1 if answer["failed"] or not answer["changed"] else 0
