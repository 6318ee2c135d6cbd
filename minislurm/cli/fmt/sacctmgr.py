"""sacctmgr's ``show``/``list`` output: Slurm's print_fields, with sacctmgr's field names.

Each field has the names sacctmgr takes for it in ``format=`` (the shortest prefix it accepts
after each), its header and default width (a ``%N`` after the name sets the width: a positive one
right-aligns, a negative one left-aligns); cells are the width and one space, a longer value cut to
width with ``+`` as its last character, a dashes line under the header.  ``-p`` ends every field
with ``|``, ``-P`` all but the last; ``-n`` leaves the header out.  The table is sacctmgr 22.05's
(``format=`` of a field it lists but minislurm does not keep, such as a limit, prints blank).
"""

from __future__ import annotations

from dataclasses import dataclass

# (names and shortest prefixes, header, width, kind): sacctmgr's fields, in the order it tries them
FIELDS = [
    ((('Account', 3), ('Acct', 4)), 'Account', 10, 'acct'),
    ((('ActionRaw', 7),), 'ActionRaw', 10, 'actionraw'),
    ((('Action', 4),), 'Action', 20, 'action'),
    ((('Actor', 4),), 'Actor', 10, 'actor'),
    ((('AdminLevel', 2),), 'Admin', 9, 'admin'),
    ((('Allowed', 2),), '% Allowed', 10, 'allowed'),
    ((('Associations', 2),), 'Assocs', 10, 'assoc_name'),
    ((('TRES', 2),), 'TRES', 20, 'tres'),
    ((('Classification', 3),), 'Class', 9, 'class'),
    ((('ClusterNodes', 8),), 'Cluster Nodes', 20, 'cluster_nodes'),
    ((('Clusters', 2),), 'Cluster', 10, 'cluster'),
    ((('Coordinators', 2),), 'Coord Accounts', 20, 'coords'),
    ((('ControlHost', 8),), 'ControlHost', 15, 'chost'),
    ((('ControlPort', 8),), 'ControlPort', 12, 'cport'),
    ((('Count', 3),), 'Count', 6, 'count'),
    ((('CountAllowed', 6),), '# Allowed', 10, 'callowed'),
    ((('CountUsed', 6),), '# Used', 10, 'callowed'),
    ((('CPUCount', 2),), 'CPU Cnt', 7, 'cpus'),
    ((('DefaultAccount', 8),), 'Def Acct', 10, 'dacct'),
    ((('DefaultQOS', 8),), 'Def QOS', 9, 'dqos'),
    ((('DefaultWCKey', 8),), 'Def WCKey', 10, 'dwckey'),
    ((('Description', 3),), 'Descr', 20, 'desc'),
    ((('Duration', 2),), 'Duration', 13, 'duration'),
    ((('EventRaw', 6),), 'EventRaw', 8, 'eventraw'),
    ((('Event', 2),), 'Event', 7, 'event'),
    ((('Features', 3),), 'Features', 20, 'features'),
    ((('Federation', 3),), 'Federation', 10, 'federation'),
    ((('FedState', 4),), 'FedState', 12, 'fedstate'),
    ((('FedStateRaw', 9),), 'FedStateRaw', 11, 'fedstateraw'),
    ((('Flags', 2),), 'Flags', 20, 'flags'),
    ((('GraceTime', 3),), 'GraceTime', 10, 'grace'),
    ((('GrpCPUs', 6),), 'GrpCPUs', 8, 'grpc'),
    ((('GrpCPUMins', 7),), 'GrpCPUMins', 11, 'grpcm'),
    ((('GrpCPURunMins', 7),), 'GrpCPURunMins', 13, 'grpcrm'),
    ((('GrpTRES', 7),), 'GrpTRES', 13, 'grpt'),
    ((('GrpTRESMins', 7),), 'GrpTRESMins', 13, 'grptm'),
    ((('GrpTRESRunMins', 7),), 'GrpTRESRunMins', 13, 'grptrm'),
    ((('GrpJobs', 4),), 'GrpJobs', 7, 'grpj'),
    ((('GrpJobsAccrue', 8),), 'GrpJobsAccrue', 13, 'grpja'),
    ((('GrpMemory', 4),), 'GrpMem', 7, 'grpmem'),
    ((('GrpNodes', 4),), 'GrpNodes', 8, 'grpn'),
    ((('GrpSubmitJobs', 4),), 'GrpSubmit', 9, 'grps'),
    ((('GrpWall', 4),), 'GrpWall', 11, 'grpw'),
    ((('ID', 2),), 'ID', 6, 'id'),
    ((('Info', 2),), 'Info', 20, 'info'),
    ((('LFT', 1),), 'LFT', 6, 'lft'),
    ((('servertype', 10),), 'ServerType', 10, 'servertype'),
    ((('MaxCPUMinsPerJob', 7),), 'MaxCPUMins', 11, 'maxcm'),
    ((('MaxCPURunMinsPerUser', 7), ('MaxCPURunMinsPU', 7)), 'MaxCPURunMinsPU', 15, 'maxcrm'),
    ((('MaxCPUsPerJob', 7),), 'MaxCPUs', 8, 'maxc'),
    ((('MaxCPUsPerUser', 11), ('MaxCPUsPU', 9)), 'MaxCPUsPU', 9, 'maxcu'),
    ((('MaxTRES', 7), ('MaxTRESPerJob', 11)), 'MaxTRES', 13, 'maxt'),
    ((('MaxTRESPerNode', 11),), 'MaxTRESPerNode', 14, 'maxtn'),
    ((('MaxTRESMinsPerJob', 8),), 'MaxTRESMins', 13, 'maxtm'),
    ((('MaxTRESRunMinsPerAccount', 18), ('MaxTRESRunMinsPerAcct', 18), ('MaxTRESRunMinsPA', 15)), 'MaxTRESRunMinsPA', 15, 'maxtrma'),
    ((('MaxTRESRunMinsPerUser', 8), ('MaxTRESRunMinsPU', 8)), 'MaxTRESRunMinsPU', 15, 'maxtrm'),
    ((('MaxTRESPerAccount', 11), ('MaxTRESPerAcct', 11), ('MaxTRESPA', 9)), 'MaxTRESPA', 13, 'maxta'),
    ((('MaxTRESPerUser', 11), ('MaxTRESPU', 9)), 'MaxTRESPU', 13, 'maxtu'),
    ((('MaxJobs', 4),), 'MaxJobs', 7, 'maxj'),
    ((('MaxJobsAccrue', 4),), 'MaxJobsAccrue', 13, 'maxja'),
    ((('MaxJobsAccruePerAccount', 17), ('MaxJobsAccruePerAcct', 17), ('MaxJobsAccruePA', 15)), 'MaxJobsAccruePA', 15, 'maxjaa'),
    ((('MaxJobsAccruePerUser', 17), ('MaxJobsAccruePU', 15)), 'MaxJobsAccruePU', 15, 'maxjau'),
    ((('MaxJobsPerAccount', 11), ('MaxJobsPerAcct', 11), ('MaxJobsPA', 9)), 'MaxJobsPA', 9, 'maxjpa'),
    ((('MaxJobsPerUser', 11), ('MaxJobsPU', 9)), 'MaxJobsPU', 9, 'maxj'),
    ((('MaxNodesPerJob', 4),), 'MaxNodes', 8, 'maxn'),
    ((('MaxNodesPerUser', 12), ('MaxNodesPU', 10)), 'MaxNodesPU', 10, 'maxnu'),
    ((('MinPrioThreshold', 4),), 'MinPrioThres', 12, 'minpt'),
    ((('MaxSubmitJobs', 4),), 'MaxSubmit', 9, 'maxs'),
    ((('MaxSubmitJobsPerAccount', 17), ('MaxSubmitJobsPerAcct', 17), ('MaxSubmitJobsPA', 15), ('MaxSubmitPA', 11)), 'MaxSubmitPA', 11, 'maxsa'),
    ((('MaxSubmitJobsPerUser', 10), ('MaxSubmitJobsPU', 10), ('MaxSubmitPU', 6)), 'MaxSubmitPU', 11, 'maxs'),
    ((('MaxWallDurationPerJob', 4),), 'MaxWall', 11, 'maxw'),
    ((('MinCPUsPerJob', 7),), 'MinCPUs', 8, 'minc'),
    ((('MinTRESPerJob', 7),), 'MinTRES', 13, 'mint'),
    ((('Name', 2),), 'Name', 10, 'name'),
    ((('NodeCount', 5),), 'NodeCount', 9, 'nodecnt'),
    ((('NodeInx', 5),), 'NodeInx', 9, 'nodeinx'),
    ((('NodeNames', 5),), 'NodeName', -15, 'nodename'),
    ((('Organization', 1),), 'Org', 20, 'org'),
    ((('ParentID', 7),), 'ParentID', 8, 'pid'),
    ((('ParentName', 7),), 'ParentName', 10, 'pname'),
    ((('Partition', 4),), 'Partition', 10, 'part'),
    ((('PluginIDSelect', 2),), 'PluginIDSelect', 14, 'select'),
    ((('PreemptMode', 8),), 'PreemptMode', 11, 'preem'),
    ((('Preempt', 7),), 'Preempt', 10, 'pree'),
    ((('PreemptExemptTime', 8),), 'PreemptExemptTime', 19, 'prxmpt'),
    ((('Priority', 3),), 'Priority', 10, 'prio'),
    ((('Problem', 1),), 'Problem', 40, 'problem'),
    ((('QOSLevel', 3),), 'QOS', 20, 'qos'),
    ((('QOSRAWLevel', 4),), 'QOS_RAW', 10, 'qos_raw'),
    ((('Reason', 1),), 'Reason', 30, 'reason'),
    ((('RGT', 1),), 'RGT', 6, 'rgt'),
    ((('RPC', 1),), 'RPC', 5, 'rpc_version'),
    ((('Server', 3),), 'Server', 10, 'server'),
    ((('Share', 1), ('FairShare', 2)), 'Share', 9, 'fairshare'),
    ((('StateRaw', 6),), 'StateRaw', 8, 'stateraw'),
    ((('State', 1),), 'State', 6, 'state'),
    ((('TimeStamp', 2),), 'Time', 19, 'ts'),
    ((('TimeEligible', 6), ('Eligible', 2)), 'TimeEligible', 19, 'timeeligible'),
    ((('TimeEnd', 6), ('End', 2)), 'TimeEnd', 19, 'timeend'),
    ((('TimeStart', 7), ('Start', 3)), 'TimeStart', 19, 'timestart'),
    ((('TimeSubmit', 6), ('Submit', 2)), 'TimeSubmit', 19, 'timesubmit'),
    ((('TRES', 2),), 'TRES', 20, 'tres'),
    ((('Type', 2),), 'Type', 8, 'type'),
    ((('UnusedWall', 2),), 'UnusedWall', 10, 'unused'),
    ((('UsageFactor', 6),), 'UsageFactor', 11, 'uf'),
    ((('UsageThreshold', 6),), 'UsageThres', 10, 'ut'),
    ((('LimitFactor', 6),), 'LimitFactor', 11, 'lf'),
    ((('Allocated', 7),), '% Allocated', 11, 'allocated'),
    ((('User', 1),), 'User', 10, 'user'),
    ((('WCKeys', 2),), 'WCKeys', 20, 'wckeys'),
    ((('Where', 2),), 'Where', 20, 'where'),
]


class FormatError(ValueError):
    pass


@dataclass(frozen=True)
class Field:
    kind: str
    header: str
    width: int


def field(spec: str) -> Field:
    """``Account%256`` -> the Account field, 256 wide; ``Unknown field 'x'`` otherwise."""
    name, _, width = spec.partition("%")
    for names, header, default, kind in FIELDS:
        if any(least <= len(name) <= len(full) and full.lower().startswith(name.lower()) for full, least in names):
            try:
                size = int(width) if width else 0
            except ValueError:
                size = 0  # atoi's reading of a width that is not a number
            return Field(kind, header, size or default)
    raise FormatError(f"Unknown field '{name}'")


def fields(specs: list[str]) -> list[Field]:
    return [field(s) for s in specs if s]


def _cell(text: str | None, width: int) -> str:
    size = abs(width)
    text = " " if text is None else text
    if len(text) > size:
        text = text[:size - 1] + "+"
    return (text.rjust(size) if width > 0 else text.ljust(size)) + " "


def table(columns: list[Field], rows: list[dict], *, header: bool = True, parsable: bool = False,
          parsable2: bool = False) -> str:
    """The text: ``rows`` map a field's kind to its value (absent or None: blank)."""
    lines = []
    if header:
        if parsable or parsable2:
            lines.append(_line(columns, [c.header for c in columns], parsable, parsable2))
        else:  # a header is cut to its width without a "+"
            lines.append("".join(_cell(c.header[:abs(c.width)], c.width) for c in columns))
            lines.append("".join("-" * abs(c.width) + " " for c in columns))
    for row in rows:
        lines.append(_line(columns, [row.get(c.kind) for c in columns], parsable, parsable2))
    return "".join(line + "\n" for line in lines)


def _line(columns: list[Field], values: list, parsable: bool, parsable2: bool) -> str:
    if parsable2:
        return "|".join("" if v is None else str(v) for v in values)
    if parsable:
        return "".join(("" if v is None else str(v)) + "|" for v in values)
    return "".join(_cell(None if v is None else str(v), c.width) for c, v in zip(columns, values))
