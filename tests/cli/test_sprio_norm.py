"""sprio -n/--norm, -v/--verbose, -u's USER column and the normalized -o letters, as sprio
22.05 has them (src/sprio/sprio.c, opts.c, print.c of slurm-22-05-9-1; not yet recorded on the twin)."""

from minislurm.cli.fmt.sprio import default_format, format_sprio
from minislurm.sched.priority.multifactor import Factors

ROWS = [Factors(1044, "bob", "eval", "gpu", 123.4, 5000.0, 12.5, 1000.0, 0, 6135)]
W = {"age": 1000, "fairshare": 10000, "jobsize": 1000, "partition": 1000}


def test_norm_default_format_and_values():
    assert default_format(W, norm=True) == "%.15i %9r %10y %10a %10f %10j %10p"
    assert format_sprio(ROWS, weights=W, norm=True) == (
        "          JOBID PARTITION PRIORITY   AGE        FAIRSHARE  JOBSIZE    PARTITION \n"
        "           1044 gpu       0.00000142 0.1234000  0.5000000  0.0125000  1.0000000 \n")


def test_norm_long():
    out = format_sprio(ROWS, weights=W, norm=True, long=True).splitlines()
    assert out[0].split() == ["JOBID", "PARTITION", "USER", "PRIORITY", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE",
                              "PARTITION", "QOS", "TRES"]
    assert out[1].split() == ["1044", "gpu", "bob", "0.00000142", "0.1234000", "0.0000000", "0.5000000",
                              "0.0125000", "1.0000000", "0.0000000"]


def test_users_add_the_user_column():
    assert default_format(W, users=True) == "%.15i %9r %.8u %.10Y %.10S %.10A %.10F %.10J %.10P"


def test_every_letter_of_22_05_is_known():
    text = format_sprio(ROWS, weights=W, fmt="%i %r %u %o %Y %y %S %A %a %B %b %F %f %J %j %P %p %Q %q %N %T %t %c",
                        cluster="linux", noheader=True)
    assert text.split() == ["1044", "gpu", "bob", "eval", "6135", "0.00000142841600", "0", "123", "0.1234000", "0",
                            "0.0000000", "5000", "0.5000000", "12", "0.0125000", "1000", "1.0000000", "0",
                            "0.0000000", "0", "linux"]


def test_verbose_prints_the_options_first(capsys, monkeypatch):
    from minislurm.cli import sprio

    class Fake:
        def __init__(self, *a, **k):
            pass

        def call(self, method, path, *a, **k):
            return {"/priorities": {"type": "priority/multifactor", "factors": []},
                    "/config": {"config": {"PriorityWeightAge": 1000}}}[path]

    monkeypatch.setattr(sprio, "Client", Fake)
    assert sprio.main(["-v", "-j", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("-----------------------------\nformat     = (null)\njob_flag   = 1\njobs       = 5\n"
                          "partition  = (null)\nusers      = (null)\nverbose    = 1\n"
                          "-----------------------------\n\n\n")
