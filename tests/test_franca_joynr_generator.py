"""joynr's own Franca generator (release 1.25.0, Java and JavaScript) is the oracle of this
project's: per model of the corpus, what reaches the wire must be the same in the three
outputs (types' ``_typeName``, members, literals, bases and map types; interfaces' names and
versions; methods' ``paramDatatypes``, out types, error enumerations and fire-and-forget;
attributes; broadcasts), read by :mod:`tests.support.generator_oracle`.

The corpus: every ``.fidl`` directly in tests/franca/oracle (written for this test: every
Franca feature joynr supports; the files they import are in its imported/), the project's
own models (:data:`PROJECT_MODELS`: fidl/, the generated code's showcase, the example's and
the parser's wire models), and
tests/franca/oracle/package_versions (generated with joynr's ``-addVersionTo package`` and
``add_version_to="package"``). The models of
tests/franca/oracle/refused are refused by this project; what joynr's generator does with each
is recorded in :data:`JOYNR_ON_REFUSED`. joynr's generator runs once per language for the
whole corpus, both JVMs at once.
"""

from __future__ import annotations

import copy
import inspect
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyjoynr.franca.generate import GenerationError, generate, write_package
from pyjoynr.franca.model import UnionType
from pyjoynr.franca.parser import FrancaError, parse_files
from tests.support.generator_oracle import (
    Structure,
    differences,
    from_java,
    from_project,
    from_typescript,
)
from tests.support.joynr_generator import Job, Outcome, run_languages

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "tests" / "franca" / "oracle"
REFUSED = ORACLE / "refused"
PACKAGE_VERSIONS = ORACLE / "package_versions"
PACKAGE = "oracle_generated"

log = logging.getLogger("tests.franca_joynr_generator")

#: the project's own models that Franca's grammar takes (a folder: every .fidl under it)
PROJECT_MODELS = (ROOT / "examples" / "radio" / "radio.fidl",
                  ROOT / "tests" / "franca" / "parser" / "wire",
                  ROOT / "fidl",
                  ROOT / "tests" / "franca" / "generated")
#: what joynr's generator (Java, JavaScript) does with each model this project refuses
JOYNR_ON_REFUSED = {
    # Franca's Integer: the generator's feature check throws
    "integer.fidl": {"java": "failed", "javascript": "failed"},
    # a union used by a method: Java makes a struct-like class of the union, JavaScript
    # the interface without any type for the union (a parameter of a type never declared)
    "union.fidl": {"java": "generated", "javascript": "generated"},
    # enumerator values that are no integers: Java's generator throws reading them,
    # JavaScript's writes the enumerators with empty values
    "enumerator_not_integer.fidl": {"java": "failed", "javascript": "generated"},
    # an unescaped asterisk in a structured comment: Franca's grammar ends the annotation
    # there and the model does not load
    "comment_asterisk.fidl": {"java": "refused", "javascript": "refused"},
}


@dataclass(frozen=True)
class Model:
    """One model of the corpus: what joynr's generator is given, the files this project
    parses, the add_version_to mode."""

    path: Path
    add_version_to: str = "none"

    @property
    def files(self) -> list[Path]:
        return sorted(self.path.rglob("*.fidl")) if self.path.is_dir() else [self.path]

    @property
    def id(self) -> str:
        return str(self.path.relative_to(ROOT))


def corpus() -> list[Model]:
    return [*(Model(p) for p in sorted(ORACLE.glob("*.fidl"))),
            *(Model(p) for p in PROJECT_MODELS),
            *(Model(p, "package") for p in sorted(PACKAGE_VERSIONS.glob("*.fidl")))]


CORPUS = corpus()
REFUSED_MODELS = sorted(REFUSED.glob("*.fidl"))


@dataclass(frozen=True)
class JoynrRun:
    out: Path
    outcomes: dict[str, dict[Path, Outcome]]
    seconds: float

    def folder(self, model: Model, language: str) -> Path:
        outcome = self.outcomes[language][model.path]
        assert outcome.status == "generated", (
            f"joynr's {language} generator {outcome.status} {model.id}:\n{outcome.output}")
        return self.out / language / model.id


@pytest.fixture(scope="session")
def joynr_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JoynrRun]:
    """joynr's generator on the whole corpus and the refused models: one JVM per language,
    both at once."""
    out = tmp_path_factory.mktemp("joynr-generated")
    models = [*CORPUS, *(Model(p) for p in REFUSED_MODELS)]
    began = time.monotonic()
    outcomes = run_languages({
        language: [Job(m.path, out / language / m.id, m.add_version_to) for m in models]
        for language in ("java", "javascript")})
    seconds = time.monotonic() - began
    log.info("joynr's generator on %d models, Java and JavaScript at once: %.1f s",
             len(models), seconds)
    yield JoynrRun(out, outcomes, seconds)


def project_structure(model: Model, tmp_path: Path) -> Structure:
    if model.add_version_to != "none":
        if "add_version_to" not in inspect.signature(generate).parameters:
            pytest.fail("generate(...) has no add_version_to yet: package_versions/ needs it")
        files = generate(parse_files(model.files), PACKAGE,  # type: ignore[call-arg]
                         add_version_to=model.add_version_to)
    else:
        files = generate(parse_files(model.files), PACKAGE)
    write_package(files, tmp_path)
    return from_project(tmp_path, PACKAGE)


def unions(model: Model) -> list[str]:
    """The wire names of the unions of ``model`` (and of what it imports)."""
    return [decl.wire_name for decl in parse_files(model.files).declarations()
            if isinstance(decl, UnionType)]


@pytest.mark.parametrize("model", CORPUS, ids=[m.id for m in CORPUS])
def test_the_wire_names_are_joynrs(model: Model, joynr_run: JoynrRun, tmp_path: Path) -> None:
    java = from_java(joynr_run.folder(model, "java"))
    typescript = from_typescript(joynr_run.folder(model, "javascript"))
    project = project_structure(model, tmp_path)
    assert java["types"] or java["interfaces"], f"joynr generated nothing from {model.id}"
    # a union: joynr's Java generator makes a struct-like class of it, its JavaScript
    # generator nothing, this project skips it (and says so): compared with JavaScript's
    for union in unions(model):
        assert union in java["types"] and union not in typescript["types"], union
        assert union not in project["types"], union
        del java["types"][union]
    found = [*differences(java, typescript, "joynr Java", "joynr TypeScript"),
             *differences(java, project, "joynr Java"),
             *differences(typescript, project, "joynr TypeScript")]
    assert not found, f"{model.id}:\n" + "\n".join(found)


def test_the_comparison_names_what_differs(joynr_run: JoynrRun, tmp_path: Path) -> None:
    model = Model(ORACLE / "navigator.fidl")
    java = from_java(joynr_run.folder(model, "java"))
    project = project_structure(model, tmp_path)
    assert differences(java, project) == []
    altered = copy.deepcopy(project)
    methods = altered["interfaces"]["oracle/road/nav/Navigator"]["methods"]
    methods["honk(Short)"] = methods.pop("honk(Byte)")
    altered["types"]["joynr.oracle.road.types.Road.Kind"]["literals"][1] = "PRIMARY_ROAD"
    altered["interfaces"]["oracle/road/nav/Navigator"]["attributes"]["route"]["readonly"] = False
    assert differences(java, altered) == [
        "type joynr.oracle.road.types.Road.Kind literals: joynr ['MOTORWAY', 'PRIMARY', "
        "'SECONDARY', 'TRACK'] project ['MOTORWAY', 'PRIMARY_ROAD', 'SECONDARY', 'TRACK']",
        "oracle/road/nav/Navigator.honk paramDatatypes: joynr [['Byte']] project [['Short']]",
        "oracle/road/nav/Navigator.route readonly: joynr True project False",
    ]


@pytest.mark.parametrize("path", REFUSED_MODELS, ids=[p.name for p in REFUSED_MODELS])
def test_a_refused_model_is_refused_and_joynrs_outcome_recorded(
        path: Path, joynr_run: JoynrRun) -> None:
    with pytest.raises((FrancaError, GenerationError)):
        generate(parse_files([path]), PACKAGE)
    assert {language: joynr_run.outcomes[language][path].status
            for language in ("java", "javascript")} == JOYNR_ON_REFUSED[path.name]


def test_every_refused_model_is_in_the_table() -> None:
    assert sorted(p.name for p in REFUSED_MODELS) == sorted(JOYNR_ON_REFUSED)
