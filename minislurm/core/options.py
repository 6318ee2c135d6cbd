"""The sbatch/srun option table and a parser that behaves like Slurm's ``getopt_long("+...")``.

Why not argparse: Slurm's behaviour a learner can see depends on getopt details argparse does
not share.  An optional argument is taken only with ``=`` (``#SBATCH --nice 0`` leaves ``0`` as
a stray word, which sbatch rejects), a required argument takes the next word even when it
starts with ``-``, parsing stops at the first non-option (``sbatch -N2 job.sh -N5``), ``--``
ends the options, long names may be abbreviated to a unique prefix, and the error lines are
glibc's (``sbatch: unrecognized option '--foo'``).  So the table is data and the scanner is
ours; the values are converted by :mod:`minislurm.core.opthandlers`, in the order given.

Options minislurm acts on fill :class:`JobSpec` fields; every other real Slurm option is
accepted and recorded in ``JobSpec.extra`` under its long name, so scripts written for a real
cluster still parse (and unique-prefix matching sees the same set of names as Slurm).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from minislurm.core import errors
from minislurm.core import optvalues as v
from minislurm.core.opthandlers import HANDLERS
from minislurm.core.optvalues import OptionError
from minislurm.core.spec import JobSpec

__all__ = ["OptionError", "Opt", "option_table", "split_options", "apply_options",
           "parse_options", "env_options", "combine", "validate_spec", "ENV_VARS"]

NO, REQ, OPT = "no", "req", "opt"
Pairs = list[tuple["Opt", "str | None"]]

# name [short] arg progs [key]: b = sbatch, r = srun; key (the handler) defaults to the name.
# salloc takes the allocation options sbatch and srun share, less those about a script's files.
_TABLE = """
accel-bind - req r | account A req br | acctg-freq - req br | array a req b | batch - req b
bcast - opt r | bcast-exclude - req r | begin b req br | bb - req br | bbf - req br
cluster-constraint - req br | chdir D req br | cluster - req br | clusters M req br
comment - req br | compress - opt r | container - req br | container-id - req br
context - req br | contiguous - no br | constraint C req br | core-spec S req br
cores-per-socket - req br | cpu-bind - req r | cpu_bind - req r cpu-bind | cpu-freq - req br
cpus-per-gpu - req br | cpus-per-task c req br | deadline - req br | debugger-test - no r
delay-boot - req br | dependency d req br | disable-status X no r | distribution m req br
epilog - req r | error e req br | exact - no r | exclude x req br | exclusive - opt br
export - req br | export-file - req b | external-launcher - opt r | extra - req br
extra-node-info B req br | get-user-env - opt b | gid - req b | gpu-bind - req br
gpu-freq - req br | gpus G req br | gpus-per-node - req br | gpus-per-socket - req br
gpus-per-task - req br | gres - req br | gres-flags - req br | help h no br
het-group - req r | hint - req br | hold H no br | ignore-pbs - no b | immediate I opt r
input i req br | interactive - no r | jobid - req r | job-name J req br
kill-on-bad-exit K opt r | kill-on-invalid-dep - req b | label l no r | licenses L req br
mail-type - req br | mail-user - req br | threads T req r | mcs-label - req br | mem - req br
mem-bind - req br | mem-per-cpu - req br | mem-per-gpu - req br | mincpus - req br
mpi - req r | msg-timeout - req r | multi-prog - no r | network - req br | nice - opt br
no-allocate Z no r | no-kill k opt br | no-requeue - no b | nodefile F req br
nodelist w req br | nodes N req br | ntasks n req br | ntasks-per-core - req br
ntasks-per-gpu - req br | ntasks-per-node - req br | ntasks-per-socket - req br
ntasks-per-tres - req br | open-mode - req br | output o req br | overcommit O no br
overlap - opt r | oversubscribe s no br | pack-group - req r het-group | parsable - no b
partition p req br | prefer - req br | preserve-env E no r | priority - req br
profile - req br | prolog - req r | propagate - opt br | pty - opt r | qos q req br
quiet Q no br | quit-on-interrupt - no r | reboot - no br | relative r req r | requeue - no b
reservation - req br | resv-ports - opt r | segment - req br | send-libs - opt r
signal - req br | slurmd-debug - req r | sockets-per-node - req br | spread-job - no br
stepmgr - no br | switches - req br | task-epilog - req r | task-prolog - req r
tasks-per-node - req br ntasks-per-node | test-only - no br | thread-spec - req br
threads-per-core - req br | time t req br | time-min - req br | tmp - req br
treewidth - req r | tres-bind - req br | tres-per-task - req br | uid - req b
unbuffered u no r | use-min-nodes - no br | verbose v no br | version V no br | usage - no br
wait W no b | wait W req r wait-seconds | wait-all-nodes - req b | wckey - req br
whole - no r | wrap - req b
"""


@dataclass(frozen=True, slots=True)
class Opt:
    name: str
    short: str | None
    arg: str  # NO, REQ or OPT
    key: str


_NOT_SALLOC = {"output", "error", "input", "open-mode", "export"}
_SALLOC_FROM_SRUN = {"immediate"}  # salloc's own besides what sbatch and srun share


def _load() -> dict[str, tuple[Opt, ...]]:
    tables: dict[str, list[Opt]] = {"sbatch": [], "srun": [], "salloc": []}
    for entry in _TABLE.replace("\n", "|").split("|"):
        if not entry.strip():
            continue
        name, short, arg, progs, *key = entry.split()
        opt = Opt(name, None if short == "-" else short, arg, key[0] if key else name)
        for code, prog in (("b", "sbatch"), ("r", "srun")):
            if code in progs:
                tables[prog].append(opt)
        if ("b" in progs and "r" in progs and name not in _NOT_SALLOC) or name in _SALLOC_FROM_SRUN:
            tables["salloc"].append(opt)
    return {prog: tuple(opts) for prog, opts in tables.items()}


_TABLES = _load()


def option_table(prog: str = "sbatch") -> tuple[Opt, ...]:
    """The options ``prog`` (``sbatch`` or ``srun``) accepts, in Slurm's table order."""
    return _TABLES[prog]


def _getopt_error(prog: str, message: str) -> OptionError:
    return OptionError(f'{prog}: {message}\nTry "{prog} --help" for more information')


def _long(prog: str, body: str) -> Opt:
    name = body.partition("=")[0]
    found = [o for o in _TABLES[prog] if o.name.startswith(name)]
    exact = [o for o in found if o.name == name]
    if exact:
        return exact[0]
    if not found:
        raise _getopt_error(prog, f"unrecognized option '--{body}'")
    first = found[0]
    others = [o for o in found[1:] if (o.key, o.arg) != (first.key, first.arg)]
    if others:
        names = " ".join(f"'--{o.name}'" for o in [first, *others])
        raise _getopt_error(prog, f"option '--{body}' is ambiguous; possibilities: {names}")
    return first


def split_options(words: list[str], *, prog: str = "sbatch",
                  stop_at: frozenset[str] = frozenset()) -> tuple[Pairs, list[str]]:
    """Tokenise like getopt_long with a leading ``+``: (option, value) pairs and the rest.

    An option whose key is in ``stop_at`` (``--help``) ends the scan there, last of the pairs:
    Slurm acts on it when getopt reaches it, so a bad option after it goes unseen."""
    shorts = {o.short: o for o in _TABLES[prog] if o.short}
    pairs: Pairs = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        if word.startswith("--"):
            body = word[2:]
            opt = _long(prog, body)
            _, eq, value = body.partition("=")
            if opt.arg == NO and eq:
                raise _getopt_error(prog, f"option '--{opt.name}' doesn't allow an argument")
            if opt.arg == REQ and not eq:
                if i + 1 >= len(words):
                    raise _getopt_error(prog, f"option '--{opt.name}' requires an argument")
                i += 1
                value = words[i]
            pairs.append((opt, value if eq or opt.arg == REQ else None))
            i += 1
            if opt.key in stop_at:
                return pairs, words[i:]
            continue
        j = 1
        while j < len(word):
            opt = shorts.get(word[j])
            if opt is None:
                raise _getopt_error(prog, f"invalid option -- '{word[j]}'")
            rest = word[j + 1:]
            if opt.arg == NO:
                pairs.append((opt, None))
                j += 1
                if opt.key in stop_at:
                    return pairs, words[i + 1:]
                continue
            if opt.arg == REQ and not rest:
                if i + 1 >= len(words):
                    raise _getopt_error(prog, f"option requires an argument -- '{word[j]}'")
                i += 1
                rest = words[i]
            pairs.append((opt, rest or None))
            break
        i += 1
    return pairs, words[i:]


def apply_options(pairs: Pairs, *, prog: str = "sbatch", now: float) -> JobSpec:
    """Convert option values in order (the first bad one raises), as Slurm's set functions do."""
    spec = JobSpec()
    keys = [opt.key for opt, _ in pairs]
    for opt, value in pairs:
        handler = HANDLERS.get(opt.key)
        if handler is None:
            v.set_extra(spec, opt.name, value)
        else:
            handler(spec, value, prog, now)
    if "exclusive" in keys and "oversubscribe" in keys:
        raise v.fatal(prog, "--exclusive and --oversubscribe options are mutually exclusive")
    return spec


def exported(environ: Mapping[str, str], export: str | None) -> dict[str, str]:
    """The environment ``--export`` lets through to the job (sbatch) or the tasks (srun):
    ``ALL`` (the default) all of it; ``NONE`` only the ``SLURM_*`` variables; a list such as
    ``EDITOR,ALL,FOO=bar`` the ``SLURM_*`` variables, the names listed with their current values,
    everything if ``ALL`` is among them, and the ``NAME=value`` items, which win over the
    caller's own value of the name."""
    mode = (export or "ALL").upper()
    if mode == "ALL":
        return dict(environ)
    slurm = {k: v for k, v in environ.items() if k.startswith("SLURM_")}
    if mode == "NONE":
        return slurm
    items = [e for e in export.split(",") if e]
    keep = dict(environ) if any(e.upper() == "ALL" for e in items) else slurm
    for item in items:
        if "=" not in item and item.upper() not in ("ALL", "NONE") and item in environ:
            keep[item] = environ[item]
    for item in items:  # a value given wins over ALL and over a name listed
        if "=" in item:
            name, _, value = item.partition("=")
            keep[name] = value
    return keep


def refuse_hetjob(prog: str, rest: list[str], *, het_group: bool = False) -> None:
    """A heterogeneous job on the command line (``sbatch -N1 : -N2 job.sh``, ``salloc A : B``,
    ``--het-group``) is refused before anything is asked of the controller: minislurm makes
    components from a script's ``#SBATCH hetjob`` lines only (srun's ``:`` and ``--het-group``
    inside such a job: :mod:`minislurm.cli.srun_het`), and running the first alone would leave
    the others' tasks waiting for peers that never come.  For sbatch only a ``:`` before the
    script counts (after it, words are the script's)."""
    colon = (rest[:1] == [":"]) if prog == "sbatch" else ":" in rest
    if colon or het_group:
        raise OptionError(f"{prog}: error: {errors.HETJOB_UNSUPPORTED}", 1)


def parse_options(words: list[str], *, prog: str = "sbatch", now: float) -> tuple[JobSpec, list[str]]:
    """Parse command-line words into a JobSpec and the positional words left over."""
    pairs, rest = split_options(words, prog=prog)
    spec = apply_options(pairs, prog=prog, now=now)
    if len(v.mem_kinds(spec)) > 1:
        raise v.fatal(prog, v.MEM_CLI_CONFLICT)
    validate_spec(spec, prog=prog)
    return spec, rest


# Input environment variables (sbatch and srun man pages), in the order Slurm reads them;
# a later variable for the same option wins (SLURM_NTASKS over SLURM_NPROCS).  Since 22.05 srun
# reads SRUN_CPUS_PER_TASK, not SLURM_CPUS_PER_TASK: a step does not inherit the job's -c.
_ENV = {
    "sbatch": """SBATCH_ACCOUNT account SBATCH_ARRAY_INX array SBATCH_ACCTG_FREQ acctg-freq
        SBATCH_BATCH batch SBATCH_BURST_BUFFER bb SBATCH_CLUSTER_CONSTRAINT cluster-constraint
        SBATCH_CLUSTERS clusters SLURM_CLUSTERS clusters SBATCH_CONSTRAINT constraint
        SBATCH_CONTAINER container SBATCH_CONTAINER_ID container-id SBATCH_CORE_SPEC core-spec
        SBATCH_CPU_FREQ_REQ cpu-freq SBATCH_CPUS_PER_GPU cpus-per-gpu SBATCH_DEBUG verbose
        SBATCH_DELAY_BOOT delay-boot SBATCH_DISTRIBUTION distribution SBATCH_ERROR error
        SBATCH_EXCLUSIVE exclusive SBATCH_EXPORT export SBATCH_GET_USER_ENV get-user-env
        SBATCH_GRES gres SBATCH_GRES_FLAGS gres-flags SBATCH_GPUS gpus SBATCH_GPU_BIND gpu-bind
        SBATCH_GPU_FREQ gpu-freq SBATCH_GPUS_PER_NODE gpus-per-node
        SBATCH_GPUS_PER_SOCKET gpus-per-socket SBATCH_GPUS_PER_TASK gpus-per-task
        SLURM_HINT hint SBATCH_HINT hint SBATCH_IGNORE_PBS ignore-pbs SBATCH_INPUT input
        SBATCH_JOB_NAME job-name SBATCH_MEM_BIND mem-bind SBATCH_MEM_PER_CPU mem-per-cpu
        SBATCH_MEM_PER_GPU mem-per-gpu SBATCH_MEM_PER_NODE mem SBATCH_NETWORK network
        SBATCH_NO_KILL no-kill SBATCH_NO_REQUEUE no-requeue SBATCH_OPEN_MODE open-mode
        SBATCH_OUTPUT output SBATCH_OVERCOMMIT overcommit SBATCH_PARTITION partition
        SBATCH_PROFILE profile SBATCH_QOS qos SBATCH_REQUEUE requeue
        SBATCH_RESERVATION reservation SBATCH_SEGMENT_SIZE segment SBATCH_SIGNAL signal
        SBATCH_SPREAD_JOB spread-job SBATCH_THREAD_SPEC thread-spec
        SBATCH_THREADS_PER_CORE threads-per-core SBATCH_TIMELIMIT time SBATCH_TRES_BIND tres-bind
        SBATCH_TRES_PER_TASK tres-per-task SBATCH_USE_MIN_NODES use-min-nodes SBATCH_WAIT wait
        SBATCH_WAIT_ALL_NODES wait-all-nodes SBATCH_WCKEY wckey""",
    "srun": """SLURM_ACCOUNT account SLURM_ACCTG_FREQ acctg-freq SLURM_BCAST bcast
        SLURM_BURST_BUFFER bb SLURM_CLUSTERS clusters SLURM_CLUSTER_CONSTRAINT cluster-constraint
        SLURM_COMPRESS compress SLURM_CONSTRAINT constraint SLURM_CORE_SPEC core-spec
        SRUN_CPUS_PER_TASK cpus-per-task SLURM_CPU_BIND cpu-bind SLURM_CPU_FREQ_REQ cpu-freq
        SLURM_CPUS_PER_GPU cpus-per-gpu SLURM_DELAY_BOOT delay-boot SLURM_DEPENDENCY dependency
        SLURM_DISABLE_STATUS disable-status SLURM_DISTRIBUTION distribution SLURM_EPILOG epilog
        SLURM_EXACT exact SLURM_EXCLUSIVE exclusive SLURM_EXPORT_ENV export
        SRUN_EXPORT_ENV export SLURM_GPUS gpus SLURM_GPU_BIND gpu-bind SLURM_GPU_FREQ gpu-freq
        SLURM_GPUS_PER_NODE gpus-per-node SLURM_GPUS_PER_SOCKET gpus-per-socket
        SLURM_GPUS_PER_TASK gpus-per-task SLURM_GRES gres SLURM_GRES_FLAGS gres-flags
        SLURM_HINT hint SLURM_JOB_ID jobid SLURM_JOB_NAME job-name
        SLURM_JOB_NODELIST alloc-nodelist SLURM_JOB_NUM_NODES nodes
        SLURM_KILL_BAD_EXIT kill-on-bad-exit SLURM_LABELIO label SLURM_MEM_BIND mem-bind
        SLURM_MEM_PER_CPU mem-per-cpu SLURM_MEM_PER_GPU mem-per-gpu SLURM_MEM_PER_NODE mem
        SLURM_MPI_TYPE mpi SLURM_NETWORK network SLURM_NO_KILL no-kill SLURM_NPROCS ntasks
        SLURM_NTASKS ntasks SLURM_NTASKS_PER_NODE ntasks-per-node SLURM_NTASKS_PER_GPU ntasks-per-gpu
        SLURM_OPEN_MODE open-mode SLURM_OVERCOMMIT overcommit SLURM_OVERLAP overlap
        SLURM_PARTITION partition SLURM_PROFILE profile SLURM_PROLOG prolog SLURM_QOS qos
        SLURM_REMOTE_CWD chdir SLURM_RESERVATION reservation SLURM_RESV_PORTS resv-ports
        SLURM_SIGNAL signal SLURM_SPREAD_JOB spread-job SLURM_STDERRMODE error
        SLURM_STDINMODE input SLURM_STDOUTMODE output SLURM_TASK_EPILOG task-epilog
        SLURM_TASK_PROLOG task-prolog SLURM_THREAD_SPEC thread-spec SLURM_THREADS threads
        SLURM_THREADS_PER_CORE threads-per-core SLURM_TIMELIMIT time SLURM_UNBUFFEREDIO unbuffered
        SLURM_USE_MIN_NODES use-min-nodes SLURM_WAIT wait SLURM_WCKEY wckey
        SLURM_WORKING_DIR chdir""",
    "salloc": """SALLOC_ACCOUNT account SALLOC_CONSTRAINT constraint SALLOC_DEBUG verbose
        SALLOC_EXCLUSIVE exclusive SALLOC_GPUS gpus SALLOC_GPUS_PER_NODE gpus-per-node
        SALLOC_GPUS_PER_TASK gpus-per-task SALLOC_GRES gres SALLOC_PARTITION partition SALLOC_QOS qos
        SALLOC_RESERVATION reservation SALLOC_TIMELIMIT time""",
}
ENV_VARS = {prog: dict(zip(text.split()[::2], text.split()[1::2])) for prog, text in _ENV.items()}


def env_options(environ: Mapping[str, str], *, prog: str = "sbatch", now: float) -> JobSpec:
    """The options set by ``SBATCH_*`` (sbatch) or ``SLURM_*`` (srun) input variables.

    A flag variable is on for ``""``, ``yes`` or a non-zero number and otherwise clears the
    option, as in Slurm.  Conflicting memory variables are reported by :func:`combine`,
    because a command-line memory option overrides them.
    """
    return apply_options(env_pairs(environ, prog), prog=prog, now=now)


def env_pairs(environ: Mapping[str, str], prog: str) -> Pairs:
    """The input variables as (option, value) pairs; a flag variable that clears its option is
    the pair (``reset``, option name)."""
    by_name = {o.name: o for o in _TABLES[prog]}
    pairs: Pairs = []
    for var, name in ENV_VARS[prog].items():
        if var not in environ:
            continue
        value = environ[var]
        opt = by_name.get(name) or Opt(name, None, REQ, name)
        if opt.arg == NO and not v.env_flag(value):
            pairs.append((Opt(name, None, NO, "reset"), name))
            continue
        pairs.append((opt, None if opt.arg == NO or (opt.arg == OPT and value == "") else value))
    return pairs


def combine(script: JobSpec | None, env: JobSpec, cli: JobSpec, *, prog: str = "sbatch") -> JobSpec:
    """Layer script directives < environment < command line, with Slurm's memory rules.

    Directives count as command-line options here, as they do in Slurm: two different memory
    options between them are fatal; one of them makes a conflicting variable be ignored.
    """
    script = script or JobSpec()
    given = v.mem_kinds(script) | v.mem_kinds(cli)
    if len(given) > 1:
        raise v.fatal(prog, v.MEM_CLI_CONFLICT)
    if given:
        env = v.drop_mem(replace(env, extra=dict(env.extra)), keep=given)
    elif len(v.mem_kinds(env)) > 1:
        raise v.fatal(prog, v.MEM_ENV_CONFLICT)
    spec = script.merged(env).merged(cli)
    validate_spec(spec, prog=prog)
    return spec


def validate_spec(spec: JobSpec, *, prog: str = "sbatch") -> None:
    """Checks on the final request that Slurm makes before sending it to the controller."""
    if spec.gpus_per_node is not None and any(g.name == "gpu" for g in spec.gres or ()):
        raise v.error(prog, errors.INVALID_GRES, 1)
