"""The help of sbatch, srun and salloc: their option table (:mod:`minislurm.core.options`) in
Slurm 22.05's groups, each option described in minislurm's words.

A line is ``[tags:]name | value | description`` (``-``: no value): ``tags`` (``b`` sbatch, ``r`` srun, ``a``
salloc) limit a description to those commands, ``value`` names the option's argument.  The
short letter and whether the value is optional come from the table itself, so the help cannot
disagree with what the command accepts; an option of the table that no line describes fails
tests/cli/test_help.py.  An alias (``--tasks-per-node``) is printed next to its option.
"""

from __future__ import annotations

import sys

from minislurm.core.options import NO, OPT, OptionError, option_table, split_options

TYPE_CHECKING = False  # typing's, without importing typing (2 ms of each sbatch, srun and salloc)

if TYPE_CHECKING:
    from minislurm.cli.helptext import Entry, Layout

INFO_KEYS = frozenset({"help", "usage", "version"})

_GROUPS = [
    ("Parallel run options:", """
b:array | indexes | a job array of these task ids (0-15,20 or 0-99%8)
account | name | charge the job's usage to this account
acctg-freq | datatype=interval | how often to sample the tasks' usage
r:accel-bind | type | bind tasks to accelerators near them
b:batch | list | the node features the batch step's node must have
bb | spec | burst buffer request
bbf | file_name | file holding a burst buffer request
r:bcast | dest_path | copy the program to the nodes before starting it
r:bcast-exclude | paths | library directories --send-libs leaves out
begin | time | start no earlier than this (16:00, now+3600)
a:chdir | path | the directory the command runs in
b:chdir | directory | the directory the batch script runs in
r:chdir | path | the directory the tasks run in
comment | text | any comment, for scontrol and sacct to show
r:compress | library | compress the files --bcast sends
container | path | run inside this OCI container bundle
container-id | id | the id of the container to run in
context | name | the security context of the job
cpu-freq | min[-max[:gov]] | CPU frequency (and governor) of the tasks
cpus-per-task | ncpus | CPUs for each task (threads of one process)
deadline | time | cancel the job if it cannot end by then
r:debugger-test | - | test a parallel debugger's launch
delay-boot | mins | wait this long before rebooting for features
dependency | type:jobid[:time] | wait for other jobs (afterok:12, singleton)
r:disable-status | - | Ctrl-C signals the tasks, prints no status
r:epilog | program | run this program after the step ends
b:error | err | the batch script's stderr file (%j, %A_%a)
r:error | err | where the tasks' stderr goes (%t task, %N node)
b:export | names | variables the job gets (ALL, NONE, A,B=v)
r:export | names | variables the tasks get (ALL, NONE, A,B=v)
b:export-file | file|fd | more variables for the job, read from a file
r:external-launcher | - | a step for an MPI launcher's own daemons
extra | text | arbitrary text for node selection filters
b:get-user-env | timeout | load the user's login environment
b:gid | group | run the job under this group (root only)
gres | list | generic resources per node (gpu:4, gpu:a100:2)
gres-flags | flags | how GRES are bound to CPUs (enforce-binding, ...)
r:het-group | index | the components of a heterogeneous job to run in
hold | - | submit it held (until scontrol release)
b:ignore-pbs | - | ignore #PBS and #BSUB lines of the script
ra:immediate | secs | give up unless resources are free within secs
b:input | in | the file the batch script reads as stdin
r:input | in | the tasks' stdin: all, none, a task or a file
r:interactive | - | an interactive step (salloc's default command)
r:jobid | id | run the step in this existing job
job-name | jobname | the job's name
r:kill-on-bad-exit | 0|1 | end the step when a task exits non-zero
b:kill-on-invalid-dep | yes|no | cancel the job if a dependency can never be met
r:label | - | prefix each output line with its task number
licenses | names | licenses the job needs (name[:count],...)
clusters | names | the clusters to submit to (comma-separated)
cluster | name | the cluster to submit to
distribution | type | task layout (block, cyclic, plane=N, arbitrary)
mail-type | type | when to send mail (BEGIN, END, FAIL, ALL, ...)
mail-user | user | who receives the mail
mcs-label | mcs | the label for the mcs plugin
r:mpi | type | the MPI plugin for the step (none, pmi2, pmix, ...)
r:msg-timeout | seconds | how long a message to the nodes may take
r:multi-prog | - | the program is a file naming each task's one
network | type | network options (Cray)
ntasks | ntasks | the number of tasks (processes)
nice | value | lower the job's priority by value
no-kill | off | keep running if one of the nodes fails
b:no-requeue | - | never requeue the job, even after a node failure
ntasks-per-node | n | tasks on each node
nodes | N | the number of nodes (N or min-max)
b:open-mode | append|truncate | how the output files are opened
r:open-mode | append|truncate | how the output files are opened
b:output | out | the batch script's stdout file (slurm-%j.out)
r:output | out | where the tasks' stdout goes (%t task, %N node)
overcommit | - | more tasks than CPUs on a node
r:overlap | - | let this step share its resources with other steps
b:parsable | - | print only the job id (and cluster)
partition | names | the partition(s) to run in
priority | value | set the job's priority (operators only)
r:prolog | program | run this program before the step starts
profile | value | profiling to collect (all, none, energy, task)
propagate | rlimits | pass on these resource limits (all by default)
r:preserve-env | - | SLURM_NNODES, SLURM_NTASKS win over -N, -n
r:pty | fd | task 0 on a pseudo-terminal (srun --pty bash)
qos | qos | the quality of service to run under
quiet | - | fewer messages
r:quit-on-interrupt | - | a single Ctrl-C ends the step
reboot | - | reboot the nodes before the job starts
r:relative | n | start the step at node n of the allocation
b:requeue | - | allow the job to be requeued
oversubscribe | - | share nodes with other jobs
core-spec | cores | cores to keep for the system
segment | size | the size of the segments of a job's nodes
r:send-libs | yes|no | copy the program's shared libraries with --bcast
r:signal | [R:]num[@time] | a signal this long before the time limit
b:signal | [{R|B}:]num[@time] | a signal this long before the time limit
r:slurmd-debug | level | the debug level of the step's slurmstepd
spread-job | - | spread the job over as many nodes as possible
stepmgr | - | steps managed on the job's first node
switches | max[@time] | the most network switches the job may span
r:task-epilog | program | run this program after each task
r:task-prolog | program | run this program before each task
test-only | - | say when and where it would start; submit nothing
thread-spec | threads | threads to keep for the system
r:threads | threads | how many threads srun starts the tasks with
time | minutes | time limit (M, M:S, H:M:S, D-H, D-H:M:S)
time-min | minutes | the least time limit it can do with (backfill)
r:treewidth | width | the fanout of messages to the nodes
b:uid | user | run the job as this user (root only)
r:unbuffered | - | pass the tasks' output on unbuffered
use-min-nodes | - | of a range of node counts, prefer the smallest
verbose | - | more messages (-vv more still)
b:wait | - | wait for the job to end; exit with its exit code
r:wait | sec | end the step this long after the first task exits
b:wait-all-nodes | 0|1 | start only when every node has booted
wckey | wckey | the workload key of the job
b:wrap | command string | submit this command as a one-line script
"""),
    ("Constraint options:", """
cluster-constraint | list | features the cluster must have
contiguous | - | nodes with consecutive names
constraint | list | node features (a100, a&b, a|b)
nodefile | filename | a file listing the nodes to use
mem | MB | memory per node (units K, M, G, T)
mincpus | n | at least this many CPUs per node
prefer | list | features wanted if such nodes are free
reservation | name | run in this advance reservation
tmp | MB | temporary disk space per node
nodelist | hosts... | exactly these nodes (a hostlist: n[1-4])
exclude | hosts... | never these nodes
r:no-allocate | - | run on -w's nodes with no allocation (root)
"""),
    ("Consumable resources related options:", """
r:exact | - | the step gets only the CPUs it asked for
exclusive | user|mcs | nodes of its own, shared with no other job
mem-per-cpu | MB | memory per CPU
r:resv-ports | count | reserve network ports for the step
r:whole | - | the step gets the whole of each node
"""),
    ("Affinity/Multi-core options: (when the task/affinity plugin is enabled)", """
sockets-per-node | S | nodes with at least S sockets
cores-per-socket | C | sockets with at least C cores
threads-per-core | T | cores with at least T threads
extra-node-info | S[:C[:T]] | the three above at once (-B 2:8:1)
ntasks-per-core | n | at most n tasks on each core
ntasks-per-socket | n | at most n tasks on each socket
r:cpu-bind | type | bind tasks to CPUs (cores, map_cpu:..., ...)
hint | type | bind for the program's needs (compute_bound)
mem-bind | type | bind memory to NUMA domains
"""),
    ("GPU scheduling options:", """
cpus-per-gpu | n | CPUs for each GPU
gpus | n | GPUs for the whole job ([type:]n)
gpu-bind | ... | bind tasks to GPUs (closest, single:n, ...)
gpu-freq | ... | GPU and memory frequency
gpus-per-node | n | GPUs on each node ([type:]n)
gpus-per-socket | n | GPUs on each socket
gpus-per-task | n | GPUs for each task
mem-per-gpu | n | memory for each GPU
ntasks-per-gpu | n | tasks for each GPU
ntasks-per-tres | n | tasks for each of a TRES (GPUs)
tres-bind | ... | bind tasks to TRES (gres/gpu:closest)
tres-per-task | list | TRES for each task (cpu=2,gres/gpu=1)
"""),
]


_USAGE = {
    "sbatch": ("Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]", "script [args...]"),
    "srun": ("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]",
             "executable [args...]"),
    "salloc": ("Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)]] [command(0) [args(0)...]]", "[command [args...]]"),
}


def layout(prog: str) -> "Layout":
    """The frame of ``prog``'s help, made only when asked for (helptext is not imported by a
    command that runs: its start-up is what a class of students waits on)."""
    from minislurm.cli.helptext import Layout
    usage, tail = _USAGE[prog]
    return Layout(prog, usage, main_title="Parallel run options:", version_title="Other options:", short_help=True,
                  usage_tail=tail)


_TAGS = {"sbatch": "b", "srun": "r", "salloc": "a"}


def groups(prog: str) -> list[tuple[str, list["Entry"]]]:
    """The help's groups of ``prog``'s options, help, usage and version left for the layout."""
    from minislurm.cli.helptext import Entry
    table = {o.name: o for o in option_table(prog)}
    aliases: dict[str, list[str]] = {}
    for o in table.values():
        if o.key != o.name and o.key in table:
            aliases.setdefault(o.key, []).append(f"--{o.name}")
    out = []
    for title, text in _GROUPS:
        entries, seen = [], set()
        for line in text.strip().splitlines():
            name, value, description = (part.strip() for part in line.split(" | ", 2))
            tags, _, name = name.rpartition(":")
            # salloc has the options sbatch and srun share: either's words fit it
            if name not in table or name in seen or (tags and _TAGS[prog] not in tags and prog != "salloc"):
                continue
            seen.add(name)
            opt = table[name]
            entries.append(Entry((f"-{opt.short}",) if opt.short else (), (f"--{name}", *aliases.get(name, ())),
                                 value if opt.arg != NO and value != "-" else None, opt.arg == OPT, description))
        out.append((title, entries))
    return out


def early_answer(prog: str, words: list[str]) -> int | None:
    """Answer --help, --usage or -V/--version when getopt reaches one before any error, as
    Slurm does before reading a script or contacting the controller; None otherwise."""
    try:
        pairs, _ = split_options(words, prog=prog, stop_at=INFO_KEYS)
    except OptionError:
        return None  # the full parse reports it
    if not pairs or pairs[-1][0].key not in INFO_KEYS:
        return None
    from minislurm.cli import helptext
    sys.stdout.write(helptext.answer(pairs[-1][0].key, layout(prog), groups(prog)))
    return 0
