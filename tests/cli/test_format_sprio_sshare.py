"""sprio and sshare text (see minislurm/cli/fmt/sprio.py and sshare.py)."""

from share_tree import tree_and_rows  # shared with test_sshare_format_users.py

from minislurm.cli.fmt.sprio import default_format, format_sprio
from minislurm.cli.fmt.sshare import format_sshare
from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Job, Shape
from minislurm.core.state import ClusterState
from minislurm.sched.fairshare import ShareRow
from minislurm.sched.priority.multifactor import Factors, factors

NOW = 1_709_294_400.0

ROWS = [Factors(1044, "bob", "eval", "gpu", 123.4, 5000.0, 12.5, 1000.0, 0, 6135),
        Factors(1043, "alice", "research", "gpu", 200.6, 5000.0, 50.0, 1000.0, 10, 6240)]


def test_sprio_default_shows_every_factor_minislurm_computes_sorted_by_job_id():
    assert format_sprio(ROWS) == (
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION\n"
        "           1043 gpu             6240          0        201       5000         50       1000\n"
        "           1044 gpu             6135          0        123       5000         12       1000\n")


def test_sprio_drops_columns_whose_weight_is_zero():
    assert default_format({"age": 1000, "fairshare": 0, "jobsize": 0, "partition": 0}) == \
        "%.15i %9r %.10Y %.10S %.10A"
    assert format_sprio(ROWS, weights={"fairshare": 10000}, noheader=True) == (
        "           1043 gpu             6240          0       5000\n"
        "           1044 gpu             6135          0       5000\n")


def test_sprio_long():
    assert format_sprio(ROWS[:1], long=True) == (
        "          JOBID PARTITION     USER  ACCOUNT   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE"
        "    JOBSIZE  PARTITION    QOSNAME        QOS        NICE                 TRES\n"
        "           1044 gpu            bob     eval       6135          0        123          0       5000"
        "         12       1000     normal          0           0                     \n")


def test_sprio_from_real_factors():
    config = simple_cluster(4, cpus=32)
    config.priority.weight_age, config.priority.weight_fairshare = 1000, 10000
    config.priority.weight_jobsize, config.priority.weight_partition = 1000, 1000
    state = ClusterState(config)
    job = state.add(Job(5, user="alice", account="research", partition="gpu", name="x",
                        submit_time=NOW - 3.5 * 86400, num_nodes=2, shape=Shape(cpus=32)))
    row = factors(job, state, NOW, {("research", "alice"): 0.25})
    weights = {"age": 1000, "fairshare": 10000, "jobsize": 1000, "partition": 1000}
    assert format_sprio([row], weights=weights, noheader=True) == \
        "              5 gpu             4500          0        500       2500        500       1000\n"


def test_sshare_all_users_tree_order_and_indentation():
    rows, parents = tree_and_rows()
    assert format_sshare(rows, all_users=True, parents=parents) == (
        "Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare \n"
        "-------------------- ---------- ---------- ----------- ----------- ------------- ---------- \n"
        "root                                          0.000000       12600      1.000000            \n"
        " eval                                   40    0.400000        1800      0.142857            \n"
        "  eval                    carol          1    1.000000        1800      1.000000   1.000000 \n"
        " research                               60    0.600000       10800      0.857143            \n"
        "  research                alice          1    0.333333        7200      0.666667   0.250000 \n"
        "  research                  bob          1    0.333333        3600      0.333333   0.500000 \n"
        "  vision                                 1    0.333333           0      0.000000            \n"
        "   vision                   dan          1    1.000000           0      0.000000   0.750000 \n")


def test_sshare_only_the_asked_users_and_parsable():
    rows, parents = tree_and_rows()
    assert format_sshare(rows, users=["bob"], parents=parents, noheader=True, parsable2=True) == (
        "root|||0.000000|12600|1.000000|\n"
        " eval||40|0.400000|1800|0.142857|\n"
        " research||60|0.600000|10800|0.857143|\n"
        "  research|bob|1|0.333333|3600|0.333333|0.500000\n"
        "  vision||1|0.333333|0|0.000000|\n")


def test_sshare_long_names_are_cut_with_plus():
    rows = [ShareRow("a-very-long-account-name", None, 1, 1.0, 5.0, 1.0, float("nan")),
            ShareRow("a-very-long-account-name", "someverylonguser", 1, 1.0, 5.0, 1.0, 0.5)]
    assert format_sshare(rows, all_users=True, noheader=True).splitlines()[1:] == [
        " a-very-long-accoun+                     1    1.000000           5      1.000000            ",
        "  a-very-long-accou+ someveryl+          1    1.000000           5      1.000000   0.500000 "]
