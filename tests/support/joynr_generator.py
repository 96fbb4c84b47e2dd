"""joynr's own Franca generator (the current release) as the oracle of this project's: run on
Franca models for Java and for JavaScript (TypeScript), its output read into plain structures
by :mod:`tests.support.generator_oracle`.

The generator runs from the ``joynr-generator`` module of the Java oracles' Maven build
(:func:`tests.support.java_oracles.build`) through its batch program: one JVM per language
generates every model of a run, each into a folder of its own, so that the JVM's start and the
generator's set-up are paid once and not per model. joynr's ``Executor`` exits with status 0
when it skips what it cannot generate, and ends the JVM when a model does not load; the batch
program loads each model first and says per model whether joynr refused it, failed on it or
generated it, and the output joynr's generator logged is kept with each.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.support.java_oracles import OracleError, build

MODULE = "joynr-generator"
MAIN = "pyjoynr.oracles.generator.Batch"
#: joynr's names of the generation languages this project compares with
LANGUAGES = ("java", "javascript")
#: the values of joynr's -addVersionTo (and of this project's ``add_version_to``)
ADD_VERSION_TO = ("package", "comment", "none")
#: a bound on one JVM's run of a whole corpus (s)
RUN_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Job:
    """One model (a .fidl file or a folder of them) to generate into ``out``."""

    model: Path
    out: Path
    add_version_to: str = "none"


@dataclass(frozen=True)
class Outcome:
    """What joynr's generator did with a model: ``generated``, ``refused`` (the model did not
    load) or ``failed`` (generating threw), with what it logged meanwhile."""

    status: str
    output: str


def run(jobs: Sequence[Job], language: str) -> dict[Path, Outcome]:
    """Generate every job's model for ``language`` in one JVM; the outcome per model. Raises
    :class:`OracleError` when the JVM fails or does not report on every model."""
    if language not in LANGUAGES:
        raise ValueError(f"language {language!r}: one of {LANGUAGES}")
    for job in jobs:
        if job.add_version_to not in ADD_VERSION_TO:
            raise ValueError(f"add_version_to {job.add_version_to!r}: one of {ADD_VERSION_TO}")
        if "\t" in str(job.model) or "\n" in str(job.model) or "\t" in str(job.out):
            raise ValueError(f"{job.model}: a path with a tab or a line break")
        job.out.mkdir(parents=True, exist_ok=True)
    oracles = build()
    lines = "".join(f"{job.model}\t{job.out}\t{job.add_version_to}\n" for job in jobs)
    done = subprocess.run(
        ["java", "-cp", oracles.classpath(MODULE), MAIN, language], input=lines,
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    outcomes = _outcomes(done.stdout)
    missing = [str(job.model) for job in jobs if str(job.model) not in outcomes]
    if done.returncode != 0 or missing:
        raise OracleError(f"joynr's {language} generator exited {done.returncode} without "
                          f"reporting on {missing}:\n{done.stdout[-3000:]}\n"
                          f"{done.stderr[-3000:]}")
    return {Path(model): outcome for model, outcome in outcomes.items()}


def run_languages(jobs: Mapping[str, Sequence[Job]]) -> dict[str, dict[Path, Outcome]]:
    """:func:`run` for each language with its jobs, the languages' JVMs in parallel."""
    build()  # once, before the threads (they would wait for each other's lock)
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {language: pool.submit(run, language_jobs, language)
                   for language, language_jobs in jobs.items()}
        return {language: future.result() for language, future in futures.items()}


def generate(model: Path, out: Path, language: str,
             add_version_to: str = "none") -> Path:
    """Generate one model for ``language`` into ``out`` (one JVM); raises
    :class:`OracleError` unless joynr's generator generated it. Returns ``out``."""
    outcome = run([Job(model, out, add_version_to)], language)[model]
    if outcome.status != "generated":
        raise OracleError(f"joynr's {language} generator {outcome.status} {model}:\n"
                          f"{outcome.output}")
    return out


def _outcomes(stdout: str) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    model: str | None = None
    logged: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("ORACLE-JOB "):
            model, logged = line.removeprefix("ORACLE-JOB "), []
            continue
        for status in ("generated", "refused", "failed"):
            mark = f"ORACLE-{status.upper()} "
            if model is not None and line.startswith(mark + model):
                logged.append(line[len(mark) + len(model):].strip())
                found[model] = Outcome(status, os.linesep.join(x for x in logged if x))
                model = None
                break
        else:
            logged.append(line)
    return found
