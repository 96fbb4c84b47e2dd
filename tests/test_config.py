"""Configuration loading: file, defaults, environment overrides, clear errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pyjoynr.cluster_controller.config import DEFAULT_CONFIG, ClusterControllerConfig
from pyjoynr.runtime.config import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cc.toml"
    path.write_text(text)
    return path


def test_shipped_config_equals_the_documented_defaults():
    shipped = ClusterControllerConfig.load(DEFAULT_CONFIG, env={})
    # the documented differences: the shipped file runs the embedded broker and GCD
    assert shipped.mqtt.backends == {"joynrdefaultgbid": "embedded"}
    assert shipped.embedded_broker.enabled is True
    assert shipped.embedded_gcd.enabled is True
    shipped = dataclasses.replace(
        shipped, mqtt=dataclasses.replace(shipped.mqtt, backends={}),
        embedded_broker=dataclasses.replace(shipped.embedded_broker, enabled=False),
        embedded_gcd=dataclasses.replace(shipped.embedded_gcd, enabled=False))
    assert shipped == ClusterControllerConfig()


def test_file_values_and_environment_overrides(tmp_path):
    path = write(tmp_path, "[routing]\ncleanup_interval_s = 5\n[logging]\nlevel = 'debug'\n")
    config = ClusterControllerConfig.load(path, env={})
    assert config.routing.cleanup_interval_s == 5.0
    assert config.logging.level == "DEBUG"
    config = ClusterControllerConfig.load(path, env={
        "JOYNR_CC__ROUTING__CLEANUP_INTERVAL_S": "0.5",
        "JOYNR_CC__ROUTING__REPLY_TO_GRACE_MS": "1_000",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": "/tmp/x",
    })
    assert config.routing.cleanup_interval_s == 0.5
    assert config.routing.reply_to_grace_ms == 1000
    assert config.cluster_controller.data_dir == Path("/tmp/x")


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("[routing]\ncleanup_intervall_s = 5\n", {}, "unknown setting(s) cleanup_intervall_s"),
        ("[routnig]\n", {}, "unknown setting(s) routnig"),
        ("[routing]\ncleanup_interval_s = 'often'\n", {}, "routing.cleanup_interval_s"),
        ("[routing]\ncleanup_interval_s = 0\n", {}, "cleanup_interval_s must be > 0"),
        ("[routing]\nreply_to_grace_ms = 1.5\n", {}, "expected an integer"),
        ("[logging]\nlevel = 'LOUD'\n", {}, "level must be"),
        ("[websocket]\nping_timeout_s = 0\n", {}, "ping_timeout_s must be > 0"),
        ("[websocket]\nport = 70000\n", {}, "port must be in 0..65535"),
        ("[websocket]\ntls_certificate = 'c.pem'\n", {}, "go together"),
        ("[websocket]\nmax_queued_per_connection = 0\n", {}, "max_queued_per_connection"),
        ("[router]\nsweep_interval_ms = 0\n", {}, "sweep_interval_ms must be > 0"),
        ("[router]\nsweep_interval_s = 0.1\nsweep_interval_ms = 100\n", {},
         "sweep_interval_s (seconds) is sweep_interval_ms (milliseconds) now; give only that"),
        ("[router]\nretry_max_s = 'soon'\n", {}, "router.retry_max_s"),
        ("[mqtt]\nbackends = { a = 'http://x' }\n", {}, "the scheme must be one of"),
        ("[mqtt]\nbackends = { a = 'mqtt://' }\n", {}, "no host"),
        ("[mqtt]\nbackends = { a = 'mqtt://h:99999' }\n", {}, "bad broker URL"),
        ("[mqtt]\nbackends = { a = 'mqtt://h?version=4.2' }\n", {}, "version must be 5 or"),
        ("[mqtt]\nbackends = { a = 'mqtt://h?qos=2' }\n", {}, "unknown parameter"),
        ("[mqtt]\nbackends = { 'a/b' = 'mqtt://h' }\n", {}, "bad GBID"),
        ("[mqtt]\nversion = '4'\n", {}, "version must be"),
        ("[mqtt]\nmax_inflight = 0\n", {}, "max_inflight must be >= 1"),
        ("[mqtt]\nbackends = 'a = \"mqtt://h\"'\n", {}, "mqtt.backends: a table is written"),
        ("routing = 3\n", {}, "expected a [routing] table"),
        ("[routing\n", {}, "not valid TOML"),
    ],
)
def test_bad_configuration_is_refused_with_a_clear_reason(tmp_path, text, env, message):
    with pytest.raises(ConfigError) as info:
        ClusterControllerConfig.load(write(tmp_path, text), env=env)
    assert message in str(info.value)
    assert "cc.toml" in str(info.value)


def test_router_times_named_in_seconds_earlier_are_read_as_milliseconds(tmp_path, caplog):
    """[router]'s intervals were seconds (sweep_interval_s, retry_initial_s, retry_max_s) and
    are milliseconds now (*_ms): a file or variable that still names one is read, times 1,000,
    with a warning that names the new setting."""
    path = write(tmp_path, "[router]\nsweep_interval_s = 0.25\nretry_initial_s = 0.05\n")
    with caplog.at_level("WARNING", logger="pyjoynr.runtime.config"):
        config = ClusterControllerConfig.load(path, env={"JOYNR_CC__ROUTER__RETRY_MAX_S": "2"})
    assert (config.router.sweep_interval_ms, config.router.retry_initial_ms,
            config.router.retry_max_ms) == (250, 50, 2000)
    warned = sorted(r.getMessage() for r in caplog.records)
    assert warned == [
        "JOYNR_CC__ROUTER__RETRY_MAX_S: retry_max_s (seconds) is retry_max_ms (milliseconds) "
        "now: read as retry_max_ms = 2000; rename it",
        "router.retry_initial_s: retry_initial_s (seconds) is retry_initial_ms (milliseconds) "
        "now: read as retry_initial_ms = 50; rename it",
        "router.sweep_interval_s: sweep_interval_s (seconds) is sweep_interval_ms "
        "(milliseconds) now: read as sweep_interval_ms = 250; rename it",
    ]
    # the environment overrides the file whichever name each uses
    path = write(tmp_path, "[router]\nsweep_interval_ms = 20\nretry_max_s = 3\n")
    config = ClusterControllerConfig.load(path, env={"JOYNR_CC__ROUTER__SWEEP_INTERVAL_S": "0.05",
                                                     "JOYNR_CC__ROUTER__RETRY_MAX_MS": "700"})
    assert (config.router.sweep_interval_ms, config.router.retry_max_ms) == (50, 700)
    with pytest.raises(ConfigError, match="JOYNR_CC__ROUTER__SWEEP_INTERVAL_S: sweep_interval_s"):
        ClusterControllerConfig.load(path, env={"JOYNR_CC__ROUTER__SWEEP_INTERVAL_S": "0.05",
                                                "JOYNR_CC__ROUTER__SWEEP_INTERVAL_MS": "50"})
    # the new names as they are, and the old one's value checked as the new one's
    path = write(tmp_path, "[router]\nsweep_interval_ms = 20\n")
    assert ClusterControllerConfig.load(path, env={}).router.sweep_interval_ms == 20
    with pytest.raises(ConfigError, match="sweep_interval_ms must be > 0"):
        ClusterControllerConfig.load(write(tmp_path, "[router]\nsweep_interval_s = 0\n"),
                                     env={})


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        ClusterControllerConfig.load(tmp_path / "nope.toml", env={})


@pytest.mark.parametrize("key", [
    "JOYNR_CC__WEBSOCKET__PROT",          # a typo of a key
    "JOYNR_CC__WEBSOKET__PORT",           # a typo of a section
    "JOYNR_CC__WEBSOCKET",                # a section is not a setting
    "JOYNR_CC__ROUTING__CLEANUP_INTERVAL_S__X",
])
def test_an_unknown_environment_override_is_refused_and_named(tmp_path, key):
    with pytest.raises(ConfigError) as info:
        ClusterControllerConfig.load(write(tmp_path, ""), env={key: "4243"})
    assert key in str(info.value)
    assert "unknown environment override" in str(info.value)


def test_other_environment_variables_are_not_settings(tmp_path):
    env = {"JOYNR_CCX__A": "1", "JOYNR_GCD__GCD__GBID": "x", "PATH": "/bin",
           "JOYNR_CC__WEBSOCKET__PORT": "4243"}
    assert ClusterControllerConfig.load(write(tmp_path, ""), env=env).websocket.port == 4243


def test_the_gcd_refuses_unknown_environment_overrides_too(tmp_path):
    from pyjoynr.gcd.service import GcdConfig  # noqa: PLC0415

    with pytest.raises(ConfigError, match="JOYNR_GCD__GCD__BROKER"):
        GcdConfig.load(None, env={"JOYNR_GCD__GCD__BROKER": "mqtt://x"})


# --- lists and tables in environment variables: one syntax, TOML values ---------------------

@dataclasses.dataclass(frozen=True)
class Kinds:
    strings: list[str] = dataclasses.field(default_factory=list)
    ints: list[int] = dataclasses.field(default_factory=list)
    floats: list[float] = dataclasses.field(default_factory=list)
    names: tuple[str, ...] = ()
    table: dict[str, str] = dataclasses.field(default_factory=dict)
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    matrix: list[list[int]] = dataclasses.field(default_factory=list)
    groups: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    rows: list[dict[str, int]] = dataclasses.field(default_factory=list)
    maybe: list[str] | None = None
    interval_s: float = 1.0


@dataclasses.dataclass(frozen=True)
class KindsConfig:
    kinds: Kinds = dataclasses.field(default_factory=Kinds)


def load_kinds(tmp_path: Path, env: dict[str, str], text: str = "") -> KindsConfig:
    path = tmp_path / "kinds.toml"
    path.write_text(text)
    return load_config(KindsConfig, path, env_prefix="TEST_KINDS", env=env)


@pytest.mark.parametrize(("key", "text", "expected"), [
    ("strings", '["gbid-a", "gbid-b"]', ["gbid-a", "gbid-b"]),
    ("strings", '["a, b", "c"]', ["a, b", "c"]),  # a comma inside a string is just a comma
    ("strings", "[]", []),
    ("strings", '  [\n  "a",\n  "b",\n]  ', ["a", "b"]),  # multi-line, trailing comma
    ("ints", "[1, 2_000, -3]", [1, 2000, -3]),
    ("floats", "[0.5, 2, 1e3]", [0.5, 2.0, 1000.0]),
    ("names", '["x", "y"]', ("x", "y")),
    ("names", "[]", ()),
    ("table", '{ gbid-a = "mqtt://a:1883", "b.c" = "d" }',
     {"gbid-a": "mqtt://a:1883", "b.c": "d"}),
    ("table", "{}", {}),
    ("counts", "{ a = 1, b = 2 }", {"a": 1, "b": 2}),
    ("matrix", "[[1, 2], [], [3]]", [[1, 2], [], [3]]),
    ("groups", '{ a = ["x", "y"], b = [] }', {"a": ["x", "y"], "b": []}),
    ("rows", "[{ a = 1 }, { b = 2, c = 3 }]", [{"a": 1}, {"b": 2, "c": 3}]),
    ("maybe", '["a"]', ["a"]),
    ("maybe", "", None),
])
def test_a_list_or_table_from_the_environment_is_a_toml_value(tmp_path, key, text, expected):
    variable = f"TEST_KINDS__KINDS__{key.upper()}"
    loaded = getattr(load_kinds(tmp_path, {variable: text}).kinds, key)
    assert loaded == expected and type(loaded) is type(expected)
    if text.strip():  # the same text in the file: the same value
        from_file = load_kinds(tmp_path, {}, f"[kinds]\n{key} = {text.strip()}\n")
        assert getattr(from_file.kinds, key) == expected


@pytest.mark.parametrize(("key", "text", "message"), [
    # the comma form is refused, with a pointer to the TOML form
    ("strings", "a, b", """: a list is written as a TOML array, e.g. ["a", "b"]; got 'a, b'"""),
    ("strings", "gbid-a", """e.g. ["a", "b"]; got 'gbid-a'"""),
    ("ints", "1,2", "a list is written as a TOML array, e.g. [1, 2]; got '1,2'"),
    ("floats", "0.5", "a list is written as a TOML array, e.g. [0.5, 2.0]; got '0.5'"),
    ("names", "", "a list is written as a TOML array"),
    # one value and nothing else: no further keys or tables
    ("strings", '["a"]\nother = 1', """got '["a"]\\nother = 1'"""),
    ("strings", '["a"]\n[kinds]\nints = [1]', "a list is written as a TOML array"),
    ("strings", '["a"] x', "a list is written as a TOML array"),
    # a TOML value of the wrong shape or type
    ("strings", '{ a = "b" }', "a list is written as a TOML array"),
    ("table", '["a"]', """a table is written as an inline TOML table, e.g. { x = "a", y = "b" }"""),
    ("table", "a = mqtt://h", "a table is written as an inline TOML table"),
    ("rows", "{ a = 1 }", "e.g. [{ x = 1, y = 2 }, { x = 1, y = 2 }]"),
    ("ints", '[1, "x"]', "__INTS[1]: expected an integer, got 'x'"),
    ("strings", "[1]", "__STRINGS[0]: expected a string, got 1"),
    ("matrix", "[[1], 2]", "__MATRIX[1]: a list is written as a TOML array"),
    ("groups", "{ a = [true] }", "__GROUPS.a[0]: expected a string, got True"),
    ("rows", '[{ a = "x" }]', "__ROWS[0].a: expected an integer, got 'x'"),
])
def test_a_bad_list_or_table_from_the_environment_names_the_variable(tmp_path, key, text,
                                                                      message):
    variable = f"TEST_KINDS__KINDS__{key.upper()}"
    with pytest.raises(ConfigError) as info:
        load_kinds(tmp_path, {variable: text})
    assert str(info.value).startswith(variable), info.value
    assert message in str(info.value)
    assert "kinds.toml" not in str(info.value)  # the file is not to blame


def test_a_bad_value_from_the_environment_is_shown_escaped_and_cut(tmp_path):
    text = "\x1b[2J" + "x" * 5000 + "\nfake line"
    with pytest.raises(ConfigError) as info:
        load_kinds(tmp_path, {"TEST_KINDS__KINDS__STRINGS": text})
    message = str(info.value)
    assert message.startswith("TEST_KINDS__KINDS__STRINGS: a list is written as a TOML array")
    assert "\\x1b[2J" in message and "(5014 characters)" in message
    assert "\x1b" not in message and "\n" not in message and len(message) < 200


@pytest.mark.parametrize(("env", "message"), [
    ({"JOYNR_GCD__GCD__PURGE_INTERVAL_S": "abc"},
     "JOYNR_GCD__GCD__PURGE_INTERVAL_S: expected a number, got 'abc'"),
    ({"JOYNR_GCD__GCD__DEFAULT_EXPIRY_MS": "1.5"},
     "JOYNR_GCD__GCD__DEFAULT_EXPIRY_MS: expected an integer, got '1.5'"),
    ({"JOYNR_GCD__GCD__NOTIFICATIONS": "maybe"},
     "JOYNR_GCD__GCD__NOTIFICATIONS: expected true or false, got 'maybe'"),
    # the section's own checks: the variable of the setting they refuse
    ({"JOYNR_GCD__GCD__PURGE_INTERVAL_S": "-1"},
     "JOYNR_GCD__GCD__PURGE_INTERVAL_S: purge_interval_s must be > 0"),
    ({"JOYNR_GCD__GCD__VALID_GBIDS": "joynrdefaultgbid, other"},
     "JOYNR_GCD__GCD__VALID_GBIDS: a list is written as a TOML array, e.g. [\"a\", \"b\"]; "
     "got 'joynrdefaultgbid, other'"),
])
def test_a_bad_value_from_the_environment_names_the_variable_not_the_file(env, message):
    from pyjoynr.gcd.service import DEFAULT_CONFIG, GcdConfig  # noqa: PLC0415

    with pytest.raises(ConfigError) as info:
        GcdConfig.load(DEFAULT_CONFIG, env=env)
    assert str(info.value) == message


def test_a_check_of_values_from_file_and_environment_names_both(tmp_path):
    from pyjoynr.gcd.service import GcdConfig  # noqa: PLC0415

    path = tmp_path / "gcd.toml"
    path.write_text("[gcd]\ngbid = 'g1'\n")
    with pytest.raises(ConfigError) as info:
        GcdConfig.load(path, env={"JOYNR_GCD__GCD__VALID_GBIDS": '["other"]'})
    assert str(info.value).startswith(f"{path}: gcd: gbid 'g1' is not among valid_gbids")
    assert "(valid_gbids from JOYNR_GCD__GCD__VALID_GBIDS)" in str(info.value)
    config = GcdConfig.load(path, env={"JOYNR_GCD__GCD__VALID_GBIDS": '["g1", "other"]'})
    assert config.gcd.valid_gbids == ("g1", "other")


def test_a_list_in_the_file_is_a_toml_array_too(tmp_path):
    from pyjoynr.gcd.service import GcdConfig  # noqa: PLC0415

    path = tmp_path / "gcd.toml"
    path.write_text("[gcd]\nvalid_gbids = 'joynrdefaultgbid, other'\n")
    with pytest.raises(ConfigError) as info:
        GcdConfig.load(path, env={})
    assert str(info.value) == (f"{path}: gcd.valid_gbids: a list is written as a TOML array, "
                               "e.g. [\"a\", \"b\"]; got 'joynrdefaultgbid, other'")


def test_the_cluster_controller_backends_from_the_environment(tmp_path):
    env = {"JOYNR_CC__MQTT__BACKENDS": '{ gbid-a = "mqtt://a:1883", gbid-b = "mqtt://b:1883" }'}
    config = ClusterControllerConfig.load(write(tmp_path, ""), env=env)
    assert config.mqtt.backends == {"gbid-a": "mqtt://a:1883", "gbid-b": "mqtt://b:1883"}
    for text in ("gbid-a=mqtt://a:1883", "not a table", '{ gbid-a = "mqtt://a:1883" } x = 1'):
        with pytest.raises(ConfigError) as info:
            ClusterControllerConfig.load(write(tmp_path, ""),
                                         env={"JOYNR_CC__MQTT__BACKENDS": text})
        assert str(info.value).startswith("JOYNR_CC__MQTT__BACKENDS: a table is written as an "
                                          "inline TOML table, e.g. { x = \"a\", y = \"b\" }")
    with pytest.raises(ConfigError) as info:
        ClusterControllerConfig.load(write(tmp_path, ""), env={
            "JOYNR_CC__ROUTING__REPLY_TO_GRACE_MS": "soon"})
    assert str(info.value) == ("JOYNR_CC__ROUTING__REPLY_TO_GRACE_MS: expected an integer, "
                               "got 'soon'")
