"""srun --export and --exact in a step of a real batch job, against srun(1).

--export (OPTIONS): ALL, the default, passes the caller's whole environment, and with
`ALL,NAME=VALUE` the caller's own value of NAME wins over the one given; NONE passes none of it
(only the SLURM_* variables) and takes no variables after it; `NAME,NAME=VALUE` passes those and
the SLURM_* variables only. SLURM_EXPORT_ENV sets it from the environment, SRUN_EXPORT_ENV over
that, the command line over both.

--exact is approximated on Drover (docs/compat.md): the step still sees all of the job's CPUs,
srun says so on stderr, and refuses it under --strict or DROVER_COMPAT_STRICT=1, also when it
comes from SLURM_EXACT."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.integration.compat.test_srun_steps import batch, install

# The batch script's own variables: srun's caller's environment.
CALLER = "export EDITOR=caller OTHER=other\nunset ARG1\n"
# Each step writes its task's environment, NUL-separated, to NAME.env (srun -o NAME.env).
CASES = {
    "default": "",
    "all": "--export=all",  # srun compares ALL and NONE in any case
    "none": "--export=NONE",
    "names": "--export=EDITOR,NOT_IN_THE_CALLERS,ARG1=test",
    "all_names": "--export=ALL,EDITOR=/bin/emacs,ARG1=test",
    "none_names": "--export=NONE,ARG1=test",
}


def read_environment(text: str) -> dict[str, str]:
    return dict(entry.split("=", 1) for entry in text.split("\0") if "=" in entry)


def step_environments(cluster: LocalCluster, body: str) -> dict[str, dict[str, str]]:
    _, env = install(cluster)
    batch(cluster, env, CALLER + body)
    return {path.stem: read_environment(path.read_text()) for path in cluster.workdir.glob("*.env")}


def user_variables(env: dict[str, str]) -> set[str]:
    """The variables that are not the step's own (SLURM_*) nor set by the shell that starts the
    task (PWD)."""
    return {name for name in env if not name.startswith("SLURM") and name != "PWD"}


def test_every_export_form_passes_what_sruns_man_page_says(cluster: LocalCluster) -> None:
    envs = step_environments(cluster, "".join(f"srun -n1 {option} -o {name}.env /usr/bin/env -0\n"
                                               for name, option in CASES.items()))
    assert sorted(envs) == sorted(CASES)
    for name in ("default", "all"):
        env = envs[name]
        assert (env["EDITOR"], env["OTHER"], env["SRUN_DEBUG"]) == ("caller", "other", "3"), name
        assert "PATH" in env and "HOME" in env and "ARG1" not in env, name
    # NONE: none of the caller's variables, not even PATH (hence the absolute path above).
    assert user_variables(envs["none"]) == set()
    # Only the names given (one the caller lacks is left out) and the values given.
    assert user_variables(envs["names"]) == {"EDITOR", "ARG1"}
    assert (envs["names"]["EDITOR"], envs["names"]["ARG1"]) == ("caller", "test")
    # ALL first: the caller's EDITOR wins over the one given; ARG1, which it lacks, is the given one.
    assert (envs["all_names"]["EDITOR"], envs["all_names"]["ARG1"], envs["all_names"]["OTHER"]) == (
        "caller", "test", "other")
    # "User can not specify explicit environment variables with NONE".
    assert user_variables(envs["none_names"]) == set()
    for name, env in envs.items():  # whatever --export says, the step's and the job's SLURM_* variables
        assert (env["SLURM_STEP_ID"], env["SLURM_PROCID"]) == (str(list(CASES).index(name)), "0"), name
        assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == envs["default"]["SLURM_JOB_ID"], name
        assert env["SLURM_JOB_NAME"] == "steps.sh" and env["SLURM_TASK_PID"].isdigit(), name


def test_export_from_the_environment_and_which_source_wins(cluster: LocalCluster) -> None:
    """As a step in a job of `sbatch --export=NONE` gets SLURM_EXPORT_ENV=NONE, and the two ways
    srun(1) gives to pass the whole environment to such a step."""
    envs = step_environments(cluster, "export SLURM_EXPORT_ENV=NONE\n"
                                      "srun -n1 -o from_slurm.env /usr/bin/env -0\n"
                                      "srun -n1 --export=ALL -o command_line.env /usr/bin/env -0\n"
                                      "SRUN_EXPORT_ENV=ALL srun -n1 -o from_srun.env /usr/bin/env -0\n"
                                      "SLURM_EXPORT_ENV=EDITOR srun -n1 -o names.env /usr/bin/env -0\n")
    assert user_variables(envs["from_slurm"]) == set()
    assert envs["command_line"]["OTHER"] == envs["from_srun"]["OTHER"] == "other"
    assert user_variables(envs["names"]) == {"EDITOR"}


def test_exact_is_approximated_with_a_warning_and_refused_under_strictness(cluster: LocalCluster) -> None:
    _, env = install(cluster)
    out = batch(cluster, env, "srun --exact -n 2 -c 1 sh -c 'echo $SLURM_PROCID $(nproc) $SLURM_CPUS_ON_NODE' "
                              "2>&1 | sort\n"
                              "SLURM_EXACT=1 srun -n 1 echo from-the-environment 2>&1\n"
                              "srun --exact --strict -n 1 echo not-run 2>&1; echo rc=$?\n"
                              "DROVER_COMPAT_STRICT=1 SLURM_EXACT=1 srun -n 1 echo not-run 2>&1; echo rc=$?\n",
                "-n", "2")
    note = "the step's tasks share the job's CPUs"
    assert out.splitlines() == [
        # Each task sees every CPU of the job, not only its own one: the approximation.
        "0 2 2", "1 2 2", f"srun: warning: --exact: {note}",
        f"srun: warning: SLURM_EXACT=1: {note}", "from-the-environment",
        f"srun: error: --exact can only be approximated by Drover ({note}); refused under --strict", "rc=1",
        f"srun: error: SLURM_EXACT=1 can only be approximated by Drover ({note}); refused under --strict", "rc=1",
    ]
