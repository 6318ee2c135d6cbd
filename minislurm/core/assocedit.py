"""sacctmgr's ``add``, ``modify`` and ``delete`` of users and accounts, as edits of the association tree.

One pure function, :func:`plan`, reads the words of the command (``add user bob account=physics``,
``modify user where name=bob set defaultaccount=ml``, ``delete account physics``) the way
sacctmgr 22.05 reads them (keywords abbreviated to Slurm's shortest prefix, names in lower case,
comma lists) and returns the tree after the change with what sacctmgr prints about it.  The
``sacctmgr`` command runs it on the tree it fetched, to say what it will do before it asks; the
controller runs it again on its own tree, as slurmdbd checks and applies the request, before it
writes accounts.conf (:func:`minislurm.core.accounts.render_accounts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minislurm.core.accounts import ADMIN_LEVELS, AccountsError, AssociationTree, parse_accounts, render_accounts

NO_DEFAULT = "You can not remove the default account of a user"


@dataclass
class Edit:
    tree: AssociationTree
    out: list[str] = field(default_factory=list)  # stdout lines (what is added, modified, deleted)
    err: list[str] = field(default_factory=list)  # stderr lines
    failed: bool = False  # sacctmgr exits 1
    changed: bool = False  # there is something to commit
    verb: str = ""  # "adding users", "adding accounts", "" (modify, delete): how a refusal is worded
    ask: list[str] = field(default_factory=list)  # questions sacctmgr asks first, unless -i
    new_users: list[str] = field(default_factory=list)  # users an add makes (sacctmgr checks their uid)


def copy(tree: AssociationTree) -> AssociationTree:
    return parse_accounts(render_accounts(tree))


def is_word(key: str, name: str, least: int) -> bool:
    """Whether ``key`` names ``name`` as sacctmgr reads keywords: a prefix of it, case-blind,
    at least ``least`` letters long."""
    return least <= len(key) <= len(name) and name.lower().startswith(key.lower())


def split(word: str) -> tuple[str, str | None]:
    """``Key=value`` -> (key, value), ``key+=v``/``key-=v`` as ``key``; a bare word -> (word, None)."""
    key, sep, value = word.partition("=")
    if not sep:
        return word, None
    return key.rstrip("+-"), value


def names(value: str) -> list[str]:
    """A comma list as sacctmgr keeps names: quotes dropped, lower case, no empty ones but a lone one."""
    items = [v.strip().strip("'\"").lower() for v in value.split(",")]
    return [v for v in items if v] or [""]


def _shares(value: str, edit: Edit) -> int | None:
    try:
        shares = int(value)
        if shares < 0:
            raise ValueError
        return shares
    except ValueError:
        edit.err.append(f" Invalid value for Fairshare: {value}")  # (Slurm's get_uint complaint)
        edit.failed = True
        return None


def _level(value: str, edit: Edit) -> str | None:
    level = ADMIN_LEVELS.get(value.strip("'\"").lower())
    if level is None:
        edit.err.append(f" Unknown AdminLevel: {value} (None, Operator or Administrator)")
        edit.failed = True
    return level


def _accounts(tree: AssociationTree) -> list[str]:
    return [a.account for a in tree.nodes.values() if a.user is None]


def _admin(tree: AssociationTree, user: str) -> str:
    order = ("None", "Operator", "Administrator")
    return max((a.admin for a in tree.users() if a.user == user), key=order.index, default="None")


def _obj(cluster: str, account: str, user: str, wide: int = 20) -> str:
    return f"C = {cluster:<10} A = {account:<{wide}} U = {user:<9}"


# -- add ---------------------------------------------------------------------------------------
def _add_accounts(tree: AssociationTree, words: list[str], cluster: str) -> Edit:
    edit = Edit(copy(tree), verb="adding accounts")
    new: list[str] = []
    parent, shares, descr, org, limits = "root", None, None, None, False
    for word in words:
        key, value = split(word)
        if value is None and (is_word(key, "where", 5) or is_word(key, "set", 3)):
            continue
        if value is None or is_word(key, "Accounts", 1) or is_word(key, "Names", 1) or is_word(key, "Acct", 4):
            new += names(value if value is not None else key)
        elif is_word(key, "Clusters", 1):
            _cluster(names(value), cluster, edit)
        elif is_word(key, "Description", 1):
            descr = value.strip("'\"")
        elif is_word(key, "Organization", 1):
            org = value.strip("'\"")
        elif is_word(key, "Parent", 6):
            parent, limits = names(value)[0], True
        elif is_word(key, "FairShare", 1) or is_word(key, "Shares", 1):
            shares, limits = _shares(value, edit), True
        else:
            edit.err.append(f" Unknown option: {word}\n Use keyword 'where' to modify condition")
            edit.failed = True
    if edit.failed:
        return edit
    if not new:
        edit.err.append(" Need name of account to add.")
        edit.failed = True
        return edit
    t = edit.tree
    made, assoc_lines = [], []
    for name in dict.fromkeys(new):
        if not name:
            edit.err.append(" No blank names are allowed when adding.")
            edit.failed = True
            continue
        if (name, None) in t.nodes:
            continue
        made.append(name)
        if (parent, None) not in t.nodes:
            edit.err.append(f" Parent account '{parent}' doesn't exist on cluster {cluster}\n"
                            "        Contact your admin to add this account.")
            edit.failed = True
            continue
        a = t.add_account(name, parent, 1 if shares is None else shares)
        a.description, a.organization = descr, org
        assoc_lines.append(f"  A = {name:<10.10} C = {cluster:<10.10}")
    if not made:
        edit.out.append(" Nothing new added.")
        edit.failed = True
        return edit
    if not assoc_lines:
        edit.err.append(" No associations created.")
        edit.failed = True
        return edit
    edit.out += [" Adding Account(s)", *[f"  {n}" for n in made], " Settings",
                 f"  Description     = {descr or 'Account Name'}",
                 f"  Organization    = {org or 'Parent/Account Name'}", " Associations", *assoc_lines]
    if limits:
        edit.out.append(" Settings")
        if shares is not None:
            edit.out.append(f"  Fairshare     = {shares}")
        edit.out.append(f"  Parent        = {parent}")
    edit.changed = True
    return edit


def _cluster(given: list[str], cluster: str, edit: Edit) -> None:
    for name in given:
        if name != cluster.lower():
            edit.err.append(f" This cluster {name} doesn't exist.\n        Contact your admin to add it to accounting.")
            edit.failed = True


def _add_users(tree: AssociationTree, words: list[str], cluster: str) -> Edit:
    edit = Edit(copy(tree), verb="adding users")
    users: list[str] = []
    accounts: list[str] = []
    default = level = shares = None
    limits = False
    for word in words:
        key, value = split(word)
        if value is None or is_word(key, "Names", 1) or is_word(key, "Users", 1):
            users += names(value if value is not None else key)
        elif is_word(key, "AdminLevel", 2):
            level = _level(value, edit)
        elif is_word(key, "DefaultAccount", 8):
            if default is not None:
                edit.err.append(f" Already listed DefaultAccount {default}")
                edit.failed = True
                continue
            default = names(value)[0]
            accounts.append(default)
        elif is_word(key, "FairShare", 1) or is_word(key, "Shares", 1):
            shares, limits = _shares(value, edit), True
        elif is_word(key, "Accounts", 2) or is_word(key, "Acct", 4):
            accounts += names(value)
            limits = True
        elif is_word(key, "Clusters", 1):
            _cluster(names(value), cluster, edit)
            limits = True
        else:
            edit.err.append(f" Unknown option: {word}")
            edit.failed = True
    if edit.failed:
        return edit
    if not users:
        edit.err.append(" Need name of user to add.")
        edit.failed = True
        return edit
    if not accounts:
        edit.err.append(" Need name of account to add user to.")
        edit.failed = True
        return edit
    t = edit.tree
    known = set(_accounts(t))
    accounts = list(dict.fromkeys(accounts))
    for account in accounts:
        if account not in known:
            edit.err.append(f" This account '{account}' doesn't exist.\n        Contact your admin to add this account.")
            edit.failed = True
    accounts = [a for a in accounts if a in known]
    new_users, assoc_lines = [], []
    for user in dict.fromkeys(users):
        if not user:
            edit.err.append(" No blank names are allowed when adding.")
            edit.failed = True
            continue
        fresh = not t.accounts_of(user)
        if fresh and default is not None and default not in known:
            continue
        mine = [a for a in accounts if (a, user) not in t.nodes]
        if fresh and mine:
            new_users.append(user)
        for account in mine:
            t.add_user(user, account, 1 if shares is None else shares).admin = (
                level or _admin(t, user))
            assoc_lines.append(f"  U = {user:<9.9} A = {account:<10.10} C = {cluster:<10.10}")
        if fresh and mine and default is not None:
            t.defaults[user] = default
    if not new_users and not assoc_lines:
        edit.out.append(" Nothing new added.")
        edit.failed = True
        return edit
    edit.new_users = new_users
    if new_users:
        edit.out += [" Adding User(s)", *[f"  {u}" for u in new_users]]
        if default is not None or level is not None:
            edit.out.append(" Settings =")
        if default is not None:
            edit.out.append(f"  Default Account = {default}")
        if level is not None:
            edit.out.append(f"  Admin Level     = {level}")
    edit.out += [" Associations =", *assoc_lines]
    if limits:
        edit.out.append(" Non Default Settings")
        if shares is not None:
            edit.out.append(f"  Fairshare     = {shares}")
    edit.changed = True
    return edit


# -- modify --------------------------------------------------------------------------------------
@dataclass
class Where:
    names: list[str] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    defaults: list[str] = field(default_factory=list)
    levels: list[str] = field(default_factory=list)
    entity: bool = False  # a condition on the user or account itself (sacctmgr's SA_SET_USER)
    assoc: bool = False  # a condition on its associations (SA_SET_ASSOC)


def _where(word: str, entity: str, where: Where, cluster: str, edit: Edit) -> bool:
    """Read one condition word into ``where``; False if it is none."""
    key, value = split(word)
    if value is None and is_word(key, "where", 5):
        return True
    if value is None and (is_word(key, "WithAssoc", 5) or is_word(key, "WithDeleted", 5)):
        return True
    own = ("Names", 1), ("Users", 1) if entity == "user" else ("Accounts", 1)
    if value is None or any(is_word(key, n, k) for n, k in own) or (entity == "account" and is_word(key, "Acct", 4)):
        where.names += names(value if value is not None else key)
        where.entity = True
    elif entity == "user" and is_word(key, "AdminLevel", 2):
        level = _level(value, edit)
        where.levels.append(level or "")
        where.entity = True
    elif entity == "user" and is_word(key, "DefaultAccount", 8):
        where.defaults += names(value)
        where.entity = True
    elif entity == "user" and (is_word(key, "Accounts", 2) or is_word(key, "Acct", 4)):
        where.accounts += names(value)
        where.assoc = True
    elif entity == "account" and is_word(key, "Users", 1):
        where.users += names(value)
        where.assoc = True
    elif is_word(key, "Parents", 4):
        where.parents += names(value)
        where.assoc = True
    elif is_word(key, "Clusters", 1):
        _cluster(names(value), cluster, edit)
        where.entity = True
    elif entity == "account" and (is_word(key, "Descriptions", 1) or is_word(key, "Organizations", 1)):
        edit.err.append(f" Unknown condition: {word}\n Use keyword 'set' to modify value")  # minislurm: not kept
        edit.failed = True
    else:
        return False
    return True


def _words(words: list[str], entity: str, cluster: str, edit: Edit) -> tuple[Where, list[str]]:
    """The conditions (before ``set``, or after ``where``) and the ``set`` words."""
    where, sets, in_set = Where(), [], False
    for word in words:
        key, value = split(word)
        if value is None and is_word(key, "set", 3):
            in_set = True
            continue
        if value is None and is_word(key, "where", 5):
            in_set = False
            continue
        if in_set:
            sets.append(word)
        elif not _where(word, entity, where, cluster, edit):
            edit.err.append(f" Unknown condition: {word}\n Use keyword 'set' to modify value")
            edit.failed = True
    return where, sets


def _user_assocs(t: AssociationTree, where: Where) -> list:
    return [a for a in t.users()
            if (not where.names or a.user in where.names) and (not where.accounts or a.account in where.accounts)
            and (not where.parents or a.account in where.parents)
            and (not where.defaults or t.defaults.get(a.user) in where.defaults)
            and (not where.levels or _admin(t, a.user) in where.levels)]


def _modify_users(tree: AssociationTree, words: list[str], cluster: str) -> Edit:
    edit = Edit(copy(tree))
    where, sets = _words(words, "user", cluster, edit)
    level = default = shares = None
    for word in sets:
        key, value = split(word)
        if value is None:
            edit.err.append(f" Bad format on {word}: End your option with an '=' sign")
            edit.failed = True
        elif is_word(key, "AdminLevel", 2):
            level = _level(value, edit)
        elif is_word(key, "DefaultAccount", 8):
            default = names(value)[0]
        elif is_word(key, "FairShare", 1) or is_word(key, "Shares", 1):
            shares = _shares(value, edit)
        else:
            edit.err.append(f" Unknown option: {word}\n Use keyword 'where' to modify condition")
            edit.failed = True
    if edit.failed:
        return edit
    if level is None and default is None and shares is None:
        edit.err.append(" You didn't give me anything to set")
        edit.failed = True
        return edit
    if not where.entity and not where.assoc:
        edit.ask.append("You didn't set any conditions with 'WHERE'.\nAre you sure you want to continue?")
    t = edit.tree
    if level is not None or default is not None:
        if where.entity is False and where.assoc:
            edit.err.append(" There was a problem with your 'where' options.")
            edit.failed = True
        else:
            if where.accounts:  # sacctmgr asks "Did you mean DefaultAccounts?"; -i says yes
                where = Where(names=where.names, defaults=where.defaults + where.accounts, levels=where.levels,
                              entity=True)
            users = sorted({a.user for a in _user_assocs(t, where)})
            if default is not None:
                lacking = [u for u in users if (default, u) not in t.nodes]
                if lacking:
                    edit.out.append(f" Can't modify because these users aren't associated with new default "
                                    f"account '{default}'...")
                    edit.out += [f"  U = {u} C = {cluster}" for u in lacking]
                    edit.failed = True
                    return edit
            if users:
                for u in users:
                    if default is not None:
                        t.defaults[u] = default
                    if level is not None:
                        for a in t.users():
                            if a.user == u:
                                a.admin = level
                edit.out += [" Modified users...", *[f"  {u}" for u in users]]
                edit.changed = True
            else:
                edit.out.append(" Nothing modified")
                edit.failed = True
    if shares is not None:
        assocs = _user_assocs(t, where)
        if assocs:
            for a in assocs:
                a.shares = shares
            edit.out += [" Modified user associations...", *[f"  {_obj(cluster, a.account, a.user)}" for a in assocs]]
            edit.changed = True
        else:
            edit.out.append(" Nothing modified")
            edit.failed = True
    return edit


def _account_assocs(t: AssociationTree, where: Where) -> list:
    return [a for a in t.nodes.values()
            if a.user is None and a.account != "root" and (not where.names or a.account in where.names)
            and (not where.parents or a.parent in where.parents)]


def _below(t: AssociationTree, account: str) -> set[str]:
    out, todo = set(), [account]
    while todo:
        name = todo.pop()
        out.add(name)
        todo += [c.account for c in t.nodes[(name, None)].children if c.user is None]
    return out


def _modify_accounts(tree: AssociationTree, words: list[str], cluster: str) -> Edit:
    edit = Edit(copy(tree))
    where, sets = _words(words, "account", cluster, edit)
    descr = org = parent = shares = None
    for word in sets:
        key, value = split(word)
        if value is None:
            edit.err.append(f" Bad format on {word}: End your option with an '=' sign")
            edit.failed = True
        elif is_word(key, "Description", 1):
            descr = value.strip("'\"")
        elif is_word(key, "Organization", 1):
            org = value.strip("'\"")
        elif is_word(key, "Parent", 6):
            parent = names(value)[0]
        elif is_word(key, "FairShare", 1) or is_word(key, "Shares", 1):
            shares = _shares(value, edit)
        elif is_word(key, "Names", 1) or is_word(key, "Accounts", 1):
            edit.err.append(" Can't modify the name of an account")
            edit.failed = True
        else:
            edit.err.append(f" Unknown option: {word}\n Use keyword 'where' to modify condition")
            edit.failed = True
    if edit.failed:
        return edit
    if descr is None and org is None and parent is None and shares is None:
        edit.err.append(" You didn't give me anything to set")
        edit.failed = True
        return edit
    if not where.entity and not where.assoc:
        edit.ask.append("You didn't set any conditions with 'WHERE'.\nAre you sure you want to continue?")
    t = edit.tree
    if descr is not None or org is not None:
        found = _account_assocs(t, where)
        for a in found:
            a.description = descr if descr is not None else a.description
            a.organization = org if org is not None else a.organization
        if found:
            edit.out += [" Modified accounts...", *[f"  {a.account}" for a in found]]
            edit.changed = True
        else:
            edit.out.append(" Nothing modified")
            edit.failed = True
    if parent is not None or shares is not None:
        if parent is not None and (parent, None) not in t.nodes:
            edit.err.append(f" Parent Account {parent} doesn't exist.")
            edit.failed = True
            return edit
        found = _account_assocs(t, where)
        lines = []
        for a in found:
            if parent is not None and parent != a.parent:
                if parent in _below(t, a.account):
                    edit.err.append(" Error with request: Invalid parent account specified")  # a loop
                    edit.failed = True
                    return edit
                t.nodes[(a.parent, None)].children.remove(a)
                t.nodes[(parent, None)].children.append(a)
                a.parent = parent
            if shares is not None:
                a.shares = shares
            lines.append(f"  C = {cluster:<10} A = {a.account}" + (f" of {a.parent}" if a.parent != "root" else ""))
        if found:
            edit.out += [" Modified account associations...", *lines]
            edit.changed = True
        else:
            edit.out.append(" Nothing modified")
            edit.failed = True
    return edit


# -- delete ------------------------------------------------------------------------------------
def _remove(t: AssociationTree, assocs: list) -> None:
    for a in assocs:
        t.nodes.pop(a.key, None)
        parent = t.nodes.get((a.parent, None)) if a.parent else None
        if parent is not None and a in parent.children:
            parent.children.remove(a)
    for user in {a.user for a in assocs if a.user}:
        left = t.accounts_of(user)
        if not left:
            t.defaults.pop(user, None)
        elif t.defaults.get(user) not in left:
            t.defaults[user] = left[0]


def _no_default_removed(t: AssociationTree, gone: list, edit: Edit, cluster: str) -> bool:
    """Slurm keeps a user's default association while the user keeps others."""
    keys = {a.key for a in gone}
    bad = [a for a in gone if a.user and t.defaults.get(a.user) == a.account
           and any(b.key not in keys for b in t.users() if b.user == a.user)]
    if bad:
        edit.err.append(f" Error with request: {NO_DEFAULT}")
        edit.err += [f"  C = {cluster:<15} A = {a.account:<10} U = {a.user:<9}" for a in bad]
        edit.failed = True
    return not bad


def _delete_conditions(tree: AssociationTree, words: list[str], kind: str, cluster: str):
    """A delete's edit and its conditions; ``set`` words and no condition at all are refused."""
    edit = Edit(copy(tree))
    where, sets = _words(words, kind, cluster, edit)
    if sets:
        edit.err.append(f" Unknown condition: {sets[0]}\n Use keyword 'set' to modify value")
        edit.failed = True
    elif not edit.failed and not where.entity and not where.assoc:
        edit.err.append(" No conditions given to remove, not executing.")
        edit.failed = True
    return edit, where


def _delete_users(tree: AssociationTree, words: list[str], cluster: str) -> Edit:
    edit, where = _delete_conditions(tree, words, "user", cluster)
    if edit.failed:
        return edit
    t = edit.tree
    gone = _user_assocs(t, where)
    if not gone:
        edit.out.append(" Nothing deleted")
        edit.failed = True
        return edit
    if where.assoc:
        if not _no_default_removed(t, gone, edit, cluster):
            edit.err.append(" You must change the default account of these users or remove the users completely "
                            "from the affected clusters to allow these changes.\n Changes Discarded")
            return edit
        edit.out += [" Deleting user associations...", *[f"  {_obj(cluster, a.account, a.user, 10)}" for a in gone]]
        before = {a.user for a in t.users()}
        _remove(t, gone)
        emptied = sorted(before - {a.user for a in t.users()})
        if emptied:
            edit.out += [" Deleting users (No Associations)...", *[f"  {u}" for u in emptied]]
    else:
        users = sorted({a.user for a in gone})
        _remove(t, [a for a in t.users() if a.user in users])
        edit.out += [" Deleting users...", *[f"  {u}" for u in users]]
    edit.changed = True
    return edit


def _delete_accounts(tree: AssociationTree, words: list[str], cluster: str) -> Edit:
    edit, where = _delete_conditions(tree, words, "account", cluster)
    if edit.failed:
        return edit
    if "root" in where.names:
        edit.err.append(" You are not allowed to remove the root account.\n Use remove cluster instead.")
        edit.failed = True
        return edit
    t = edit.tree
    found = _account_assocs(t, where)
    if not found:
        edit.out.append(" Nothing deleted")
        edit.failed = True
        return edit
    if where.users:  # only these users' associations with the accounts
        gone = [a for a in t.users() if a.account in {f.account for f in found} and a.user in where.users]
        if not gone:
            edit.out.append(" Nothing deleted")
            edit.failed = True
            return edit
        if not _no_default_removed(t, gone, edit, cluster):
            return edit
        edit.out += [" Deleting account associations...", *[f"  {_obj(cluster, a.account, a.user, 10)}" for a in gone]]
        _remove(t, gone)
        edit.changed = True
        return edit
    below = set().union(*(_below(t, a.account) for a in found))
    gone = [a for a in t.nodes.values() if a.account in below]
    if not _no_default_removed(t, gone, edit, cluster):
        edit.err.append(" Please either remove the accounts listed above from list and resubmit,\n"
                        " or change these users' default accounts to remove the account(s).\n Changes Discarded")
        return edit
    edit.out += [" Deleting accounts...", *[f"  {a.account}" for a in found]]
    _remove(t, sorted(gone, key=lambda a: a.user is None))  # users first, then their accounts
    edit.changed = True
    return edit


ENTITIES = {"add": (("Accounts", 1, _add_accounts), ("Acct", 4, _add_accounts), ("User", 1, _add_users)),
            "modify": (("Accounts", 1, _modify_accounts), ("Acct", 4, _modify_accounts), ("Users", 1, _modify_users)),
            "delete": (("Accounts", 1, _delete_accounts), ("Acct", 4, _delete_accounts),
                       ("Users", 1, _delete_users))}
VERBS = {"add": "add", "create": "add", "modify": "modify", "update": "modify", "delete": "delete",
         "remove": "delete"}
NO_ENTITY = {
    "add": "No valid entity in add command\nInput line must include \"Account\", \"Cluster\", \"Coordinator\", "
           "\"Federation\", \"QOS\", \"Resource\", or \"User\"",
    "modify": "No valid entity in modify command\nInput line must include \"Account\", \"Cluster\", \"Federation\", "
              "\"Job\", \"QOS\", \"Resource\" or \"User\"",
    "delete": "No valid entity in delete command\nInput line must include \"Account\", \"Cluster\", "
              "\"Coordinator\", \"Federation\", \"QOS\", \"Resource\", or \"User\""}


def verb_of(word: str) -> str | None:
    """``add``/``create`` -> add, ``modify``/``update`` -> modify, ``delete``/``remove`` -> delete."""
    for name, verb in VERBS.items():
        least = 1 if verb == "modify" else 3
        if is_word(word, name, least):
            return verb
    return None


def plan(tree: AssociationTree, words: list[str], cluster: str) -> Edit:
    """``words``: the command after sacctmgr's options (``add user bob account=ml``)."""
    verb = verb_of(words[0]) if words else None
    if verb is None:
        raise AccountsError(f"invalid keyword: {words[0] if words else ''}")
    if len(words) > 1:
        for name, least, fn in ENTITIES[verb]:
            if is_word(words[1], name, least):
                return fn(tree, words[2:], cluster)
    return Edit(tree, err=[NO_ENTITY[verb]], failed=True)
