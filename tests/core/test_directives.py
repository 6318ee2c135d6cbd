"""#SBATCH directive scanning, script sanity checks, and script < env < command line."""

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minislurm.core.directives import (
    LEGACY_WARNING,
    build_spec,
    check_script,
    component_specs,
    default_job_name,
    scan_components,
    scan_directives,
    wrap_script,
)
from minislurm.core.options import OptionError

NOW = datetime(2025, 1, 15, 10, 0, 0).timestamp()


def build(script, argv=("job.sh",), env=None, **kw):
    return build_spec(script, env or {}, list(argv), now=NOW, path="job.sh", **kw)


# --- which lines count ------------------------------------------------------------------------

def test_trailing_comment_and_reference_example():
    script = "#!/bin/bash\n#SBATCH -N 2 # two nodes\n#SBATCH --requeue   # default anyway\n"
    assert scan_directives(script) == ["-N", "2", "--requeue"]


def test_indented_directive_is_a_comment():
    assert scan_directives("#!/bin/sh\n  #SBATCH -N2\n\t#SBATCH -n4\n#SBATCH -c1\n") == ["-c1"]


def test_scanning_stops_at_the_first_command():
    script = "#!/bin/sh\n#SBATCH -N1\n\n# note\n   \nsrun hostname\n#SBATCH -N4\n"
    assert scan_directives(script) == ["-N1"]


def test_case_and_spacing_of_the_magic_word():
    script = "#!/bin/sh\n#sbatch -N9\n# SBATCH -N8\n#SBATCH--nodes=2\n#SBATCHX -n1\n"
    assert scan_directives(script) == ["--nodes=2", "X", "-n1"]


def test_quotes_and_escapes():
    script = (
        '#!/bin/sh\n'
        '#SBATCH --job-name="two words" --comment=\'single quoted\'\n'
        '#SBATCH --comment="keeps # inside quotes" -o out\\#1.txt\n'
        '#SBATCH --comment=say\\"hi\\" a\\ b\n'
    )
    assert scan_directives(script) == [
        "--job-name=two words", "--comment=single quoted",
        "--comment=keeps # inside quotes", "-o", "out#1.txt",
        '--comment=say"hi"', "a", "b",  # a backslash does not join words across a blank
    ]


def test_hash_inside_a_word_ends_the_line():
    assert scan_directives("#!/bin/sh\n#SBATCH -J name#comment -N4\n") == ["-J", "name"]


def test_empty_quoted_word_ends_the_line():
    assert scan_directives('#!/bin/sh\n#SBATCH -J "" -N4\n#SBATCH -n2\n') == ["-J", "-n2"]


def test_unmatched_quote_is_fatal_and_names_file_and_line():
    with pytest.raises(OptionError) as exc:
        scan_directives('#!/bin/sh\n#SBATCH -J "foo\n', "train.sh")
    assert exc.value.text == 'sbatch: fatal: train.sh: line 2: Unmatched `"` in [ "foo]'
    assert exc.value.exit_code == 1


def test_legacy_slurm_prefix_works_and_warns_once():
    warnings = []
    script = "#!/bin/sh\n#SLURM -N3\n#SLURM -n6\n#SBATCH -c2\n"
    assert scan_directives(script, warnings=warnings) == ["-N3", "-n6", "-c2"]
    assert warnings == [LEGACY_WARNING]
    assert LEGACY_WARNING == ("sbatch: error: Change from #SLURM to #SBATCH in your script "
                              "and verify the options are valid in sbatch")


@pytest.mark.parametrize("separator", ["#SBATCH hetjob", "#SBATCH packjob", "#SBATCH  HetJob"])
def test_hetjob_separator_starts_the_next_component(separator):
    script = f"#!/bin/sh\n#SBATCH -N1 -J a\n{separator}\n#SBATCH -N2\n#SBATCH -c 3\n"
    assert scan_components(script) == [["-N1", "-J", "a"], ["-N2", "-c", "3"]]
    assert scan_directives(script) == ["-N1", "-J", "a"]  # the first component's
    second, = component_specs(script, now=0.0)
    assert (second.nodes_min, second.cpus_per_task, second.job_name) == (2, 3, None)


def test_a_stray_word_in_a_later_component_is_refused():
    with pytest.raises(OptionError) as err:
        component_specs("#!/bin/sh\n#SBATCH -N1\n#SBATCH hetjob\n#SBATCH -N1 stray\n", now=0.0)
    assert err.value.text == "sbatch: error: Invalid directive found in batch script: stray"


@given(st.lists(st.text(alphabet="abcdefgXYZ0123456789-=:,./_%", min_size=1), max_size=8))
def test_plain_words_survive(words):
    assert scan_directives("#!/bin/sh\n#SBATCH " + " ".join(words) + "\n") == words


# --- sanity checks ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "script, lines",
    [
        ("", ["Batch script is empty!"]),
        (" \n\t\n", ["Batch script contains only whitespace!"]),
        ("echo hi\n", ["This does not look like a batch script.  The first",
                       "line must start with #! followed by the path to an interpreter.",
                       "For instance: #!/bin/sh"]),
        ("#!/bin/sh\necho \0\n", ["The Slurm controller does not allow scripts that",
                                  "contain a NULL character '\\0'."]),
        ("#!/bin/sh\r\necho hi\r\n", ["Batch script contains DOS line breaks (\\r\\n)",
                                      "instead of expected UNIX line breaks (\\n)."]),
    ],
)
def test_check_script_messages(script, lines):
    with pytest.raises(OptionError) as exc:
        check_script(script)
    assert exc.value.text == "\n".join(f"sbatch: error: {line}" for line in lines)
    assert exc.value.exit_code == 1


def test_good_script_passes():
    check_script("#!/bin/bash\necho ok\n")


# --- the whole pipeline -----------------------------------------------------------------------

SCRIPT = "#!/bin/bash\n#SBATCH -p script -t 10 -J fromscript\n#SBATCH -N 2\nsrun hostname\n"


def test_precedence_script_env_cli():
    spec, rest = build(SCRIPT)
    assert (spec.partition, spec.time_limit_min, spec.nodes_min) == ("script", 10, 2)
    spec, _ = build(SCRIPT, env={"SBATCH_PARTITION": "env", "SBATCH_TIMELIMIT": "20"})
    assert (spec.partition, spec.time_limit_min) == ("env", 20)
    spec, rest = build(SCRIPT, argv=["-t", "30", "job.sh", "arg1"],
                       env={"SBATCH_PARTITION": "env", "SBATCH_TIMELIMIT": "20"})
    assert (spec.partition, spec.time_limit_min, spec.nodes_min) == ("env", 30, 2)
    assert spec.job_name == "fromscript" and rest == ["job.sh", "arg1"]


def test_stray_word_is_an_invalid_directive():
    with pytest.raises(OptionError) as exc:
        build("#!/bin/sh\n#SBATCH --nice 0\n")
    assert exc.value.text == "sbatch: error: Invalid directive found in batch script: 0"
    with pytest.raises(OptionError) as exc:
        build("#!/bin/sh\n#SBATCH -N 2 referencing the docs\n")
    assert exc.value.text == "sbatch: error: Invalid directive found in batch script: referencing"


def test_directive_errors_use_the_option_messages():
    with pytest.raises(OptionError) as exc:
        build("#!/bin/sh\n#SBATCH --time=${DEFAULT_TIME}\n")
    assert exc.value.text == "sbatch: error: Invalid --time specification"
    with pytest.raises(OptionError) as exc:
        build("#!/bin/sh\n#SBATCH --bogus\n")
    assert exc.value.text == "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information"


def test_command_line_words_are_split_before_the_script_is_checked():
    with pytest.raises(OptionError) as exc:
        build("no shebang\n", argv=["--bogus", "job.sh"])
    assert exc.value.text.startswith("sbatch: unrecognized option '--bogus'")
    with pytest.raises(OptionError) as exc:
        build("#!/bin/sh\r\n", argv=["job.sh"])
    assert exc.value.text.startswith("sbatch: error: Batch script contains DOS line breaks")


def test_memory_from_script_and_command_line_conflict():
    with pytest.raises(OptionError) as exc:
        build("#!/bin/sh\n#SBATCH --mem=4G\n", argv=["--mem-per-cpu=1G", "job.sh"])
    assert exc.value.text == "sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
    spec, _ = build("#!/bin/sh\n#SBATCH --mem=4G\n", env={"SBATCH_MEM_PER_CPU": "1G"})
    assert (spec.mem_mb, spec.mem_per_cpu_mb) == (4096, None)


def test_gres_and_gpus_per_node_from_different_sources():
    with pytest.raises(OptionError) as exc:
        build("#!/bin/sh\n#SBATCH --gres=gpu:kepler:2\n", argv=["--gpus-per-node=2", "job.sh"])
    assert exc.value.text == "sbatch: error: Invalid generic resource (gres) specification"


def test_default_job_names():
    assert build("#!/bin/sh\n", argv=["/home/a/train.sh"])[0].job_name == "train.sh"
    assert build("#!/bin/sh\n", argv=[])[0].job_name == "sbatch"
    spec, rest = build_spec(None, {}, ["--wrap=hostname"], now=NOW)
    assert (spec.job_name, spec.wrap, rest) == ("wrap", "hostname", [])
    assert build("#!/bin/sh\n", env={"SBATCH_JOB_NAME": "e"})[0].job_name == "e"
    assert default_job_name("dir/x.sbatch") == "x.sbatch"
    assert default_job_name(None, wrap=True) == "wrap"


def test_wrap_rules():
    with pytest.raises(OptionError) as exc:
        build_spec(None, {}, ["--wrap=hostname", "extra"], now=NOW)
    assert exc.value.text == "sbatch: error: Script arguments not permitted with --wrap option"
    spec, _ = build("#!/bin/sh\n#SBATCH --wrap=ignored -N3\n")
    assert spec.wrap is None and spec.nodes_min == 3  # --wrap is read from the command line only
    assert wrap_script("hostname") == "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nhostname\n"
    assert build_spec(wrap_script("hostname"), {}, ["--wrap=hostname"], now=NOW)[0].job_name == "wrap"


def test_legacy_warning_through_build_spec():
    warnings = []
    spec, _ = build("#!/bin/sh\n#SLURM -N5\n", warnings=warnings)
    assert spec.nodes_min == 5 and warnings == [LEGACY_WARNING]
