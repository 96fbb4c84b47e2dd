"""Configuration loading: file, defaults, environment overrides, clear errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cluster_controller.config import DEFAULT_CONFIG, ClusterControllerConfig
from runtime.config import ConfigError


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
        ("[router]\nsweep_interval_s = 0\n", {}, "sweep_interval_s must be > 0"),
        ("[mqtt]\nbackends = { a = 'http://x' }\n", {}, "the scheme must be one of"),
        ("[mqtt]\nbackends = { a = 'mqtt://' }\n", {}, "no host"),
        ("[mqtt]\nbackends = { a = 'mqtt://h:99999' }\n", {}, "bad broker URL"),
        ("[mqtt]\nbackends = { a = 'mqtt://h?version=4.2' }\n", {}, "version must be 5 or"),
        ("[mqtt]\nbackends = { a = 'mqtt://h?qos=2' }\n", {}, "unknown parameter"),
        ("[mqtt]\nbackends = { 'a/b' = 'mqtt://h' }\n", {}, "bad GBID"),
        ("[mqtt]\nversion = '4'\n", {}, "version must be"),
        ("[mqtt]\nmax_inflight = 0\n", {}, "max_inflight must be >= 1"),
        ("", {"JOYNR_CC__MQTT__BACKENDS": "not a table"}, "expected an inline TOML table"),
        ("routing = 3\n", {}, "expected a [routing] table"),
        ("[routing\n", {}, "not valid TOML"),
        ("", {"JOYNR_CC__ROUTING__REPLY_TO_GRACE_MS": "soon"}, "$JOYNR_CC__ROUTING__REPLY"),
    ],
)
def test_bad_configuration_is_refused_with_a_clear_reason(tmp_path, text, env, message):
    with pytest.raises(ConfigError) as info:
        ClusterControllerConfig.load(write(tmp_path, text), env=env)
    assert message in str(info.value)
    assert "cc.toml" in str(info.value)


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
    from gcd.service import GcdConfig  # noqa: PLC0415

    with pytest.raises(ConfigError, match="JOYNR_GCD__GCD__BROKER"):
        GcdConfig.load(None, env={"JOYNR_GCD__GCD__BROKER": "mqtt://x"})
