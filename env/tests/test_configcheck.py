"""The config validator: defaults, one-line errors that name the key path and the file."""

from pathlib import Path

import pytest
import yaml

from env import configcheck
from env.configcheck import ConfigError, check, fill_defaults, lint_schema, load_schema, overrides

ROOT = Path(__file__).resolve().parents[2]
BASE = "env/config.yaml"


def error_of(base, override=None):
    with pytest.raises(ConfigError) as info:
        check((BASE, base), override)
    message = str(info.value)
    assert "\n" not in message, message
    return message


def test_unknown_top_level_key_names_file_key_and_allowed_keys():
    assert error_of({"publishd": {}}) == (
        "config error: env/config.yaml: publishd: unknown key "
        "(allowed: analysis, aws, hw_probes, paper, published, systems, testbed, testbeds, workloads)"
    )


def test_nested_unknown_key_is_named_by_its_full_path_and_the_profile_file():
    allowed = ", ".join(sorted(load_schema()["properties"]["workloads"].get("properties", {}))) or "none"
    message = error_of({}, ("env/profiles/ci/config.yaml", {"workloads": {"scael": 0.1}}))
    assert message == f"config error: env/profiles/ci/config.yaml: workloads.scael: unknown key (allowed: {allowed})"


def test_nested_unknown_key_in_published():
    message = error_of({"published": {"mirorr": "/tmp"}})
    assert message == "config error: env/config.yaml: published.mirorr: unknown key (allowed: confluent_mirror, confluent_url_base, mirror, url_base)"


def test_wrong_type():
    assert error_of({"testbed": 5}) == "config error: env/config.yaml: testbed: expected string, got integer 5"


def test_wrong_type_with_a_union_of_types():
    message = error_of({"published": {"mirror": 3}})
    assert message == "config error: env/config.yaml: published.mirror: expected string or null, got integer 3"


def test_a_value_violating_a_pattern_is_reported_with_the_key():
    message = error_of({"testbed": "My Lab"})
    assert message.startswith("config error: env/config.yaml: testbed: 'My Lab': pattern ")


def test_the_error_names_the_source_that_set_the_bad_value():
    # the override sets the bad value: the override's file is named
    message = error_of({"testbed": "local"}, ("command line", {"testbed": ["x"]}))
    assert message.startswith("config error: command line: testbed: expected string, got array")
    # the base sets it and the override does not touch it: the base is named
    message = error_of({"testbed": 1}, ("env/profiles/ci/config.yaml", {"published": {"mirror": None}}))
    assert message.startswith("config error: env/config.yaml: testbed:")


def test_the_first_error_by_key_path_is_reported_when_there_are_several():
    message = error_of({"testbed": 1, "analysis": {"zzz": 1}})
    assert message.startswith("config error: env/config.yaml: analysis.zzz: unknown key")


def test_a_non_mapping_config_is_an_error():
    with pytest.raises(ConfigError, match=r"^config error: env/config.yaml: \(top level\): expected a mapping, got array$"):
        check((BASE, ["testbed"]))


def test_defaults_are_filled_from_the_schemas():
    config = check((BASE, {}))
    assert config["testbed"] == "local"
    assert config["published"] == {
        "mirror": "../shared/published/streamnative-2020",
        "url_base": "https://raw.githubusercontent.com/streamnative/openmessaging-benchmark/"
        "5e1cbd40690850a2829cb159149e1ff32e7d1925/",
        "confluent_mirror": "../shared/published/confluent-2020",
        "confluent_url_base": "https://raw.githubusercontent.com/confluentinc/openmessaging-benchmark/"
        "5b96f199e6628d8d969f886e7e329484061192ec/",
    }
    for stage in ("hw_probes", "systems", "workloads", "analysis", "paper"):
        assert isinstance(config[stage], dict)
    # a stage's own defaults are filled inside its key
    for stage in ("hw_probes", "systems", "workloads", "analysis", "paper"):
        props = load_schema()["properties"][stage].get("properties", {})
        for key, sub in props.items():
            if "default" in sub:
                assert key in config[stage], f"{stage}.{key} default not filled"


def test_given_values_win_over_defaults_and_overrides_win_over_the_base():
    config = check((BASE, {"testbed": "local", "published": {"mirror": "/srv/m"}}), ("p", {"testbed": "ci"}))
    assert config["testbed"] == "ci"
    assert config["published"]["mirror"] == "/srv/m"
    assert config["published"]["url_base"].startswith("https://")


def test_the_shipped_base_config_and_profiles_validate():
    base = yaml.safe_load((ROOT / "env/config.yaml").read_text())
    for name in ("local", "ci", "aws"):
        profile = yaml.safe_load((ROOT / f"env/profiles/{name}/config.yaml").read_text())
        config = check((BASE, base), (f"env/profiles/{name}/config.yaml", profile["config"]))
        assert config["testbed"] == name


def test_every_property_of_the_composed_schema_is_documented_and_closed():
    assert lint_schema(load_schema()) == []


def test_lint_finds_an_undocumented_property_and_an_open_object():
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"a": {"type": "object", "default": {}, "properties": {"b": {"type": "integer", "default": 1}}}},
    }
    assert lint_schema(schema) == [
        "a: property without description",
        "a: object without additionalProperties: false",
        "a.b: property without description",
    ]


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_refs_are_inlined_and_a_bad_stage_default_is_reported(tmp_path):
    write(tmp_path / "stage" / "s.yaml", {
        "type": "object", "additionalProperties": False, "default": {},
        "properties": {"n": {"type": "integer", "default": "ten", "description": "a number"}},
    })
    root = write(tmp_path / "env" / "root.yaml", {
        "type": "object", "additionalProperties": False,
        "properties": {"stage": {"$ref": "../stage/s.yaml", "description": "the stage"}},
    })
    schema = load_schema(root)
    assert schema["properties"]["stage"]["properties"]["n"]["type"] == "integer"
    assert schema["properties"]["stage"]["description"] == "the stage"
    with pytest.raises(ConfigError, match=r"^config error: defaults of .*: stage\.n: expected integer, got string 'ten'$"):
        check(("c.yaml", {}), schema_path=root)


def test_missing_stage_schema_is_named(tmp_path):
    root = write(tmp_path / "env" / "root.yaml", {"type": "object", "properties": {"x": {"$ref": "../nope.yaml"}}})
    with pytest.raises(ConfigError, match=r"nope\.yaml: schema not found$"):
        load_schema(root)


def test_invalid_yaml_is_one_line_with_file_and_line(tmp_path):
    bad = write(tmp_path / "bad.yaml", "testbed: [unclosed\nfoo: 1\n")
    with pytest.raises(ConfigError) as info:
        configcheck.load_yaml(bad)
    assert "\n" not in str(info.value)
    assert str(bad) in str(info.value) and "invalid YAML" in str(info.value)


def test_fill_defaults_does_not_modify_its_input():
    schema = load_schema()
    given = {"published": {}}
    fill_defaults(schema, given)
    assert given == {"published": {}}


class TestOverrideSource:
    def test_command_line_config(self):
        assert overrides(["snakemake", "--profile", "ci", "--config", "testbed=x"], {"testbed": "x"}) == (
            "command line", {"testbed": "x"})

    def test_command_line_config_keeps_nested_yaml_types(self):
        argv = ["snakemake", "--profile", "local", "--config", "workloads={repetitions: 3, experiments: [E000-MT1]}",
                "analysis={with_runs: false}", "label=2026-11-24", "-n"]
        # what Snakemake passes on: nested scalars as strings (YAML's BaseLoader)
        given = {"workloads": {"repetitions": "3", "experiments": ["E000-MT1"]}, "analysis": {"with_runs": "false"},
                 "label": "2026-11-24"}
        label, data = overrides(argv, given)
        assert label == "command line"
        assert data == {"workloads": {"repetitions": 3, "experiments": ["E000-MT1"]}, "analysis": {"with_runs": False},
                        "label": "2026-11-24"}

    def test_command_line_config_over_a_configfile(self, tmp_path):
        # Snakemake's merge of both: the file's values with their types, the command line's nested ones as strings
        given = {"published": {"mirror": "/m"}, "workloads": {"seed": "7"}}
        label, data = overrides(["snakemake", "--configfile", "x.yaml", "--config", "workloads={seed: 7}"], given)
        assert data == {"published": {"mirror": "/m"}, "workloads": {"seed": 7}}

    def test_profile_config_is_read_with_its_yaml_types(self, tmp_path):
        profile = write(tmp_path / "p" / "config.yaml", {
            "cores": 1, "config": {"testbed": "ci", "workloads": {"scale": 0.5, "flag": True}}})
        # what Snakemake itself passes on for a nested profile value: strings
        label, data = overrides(["snakemake", "--profile", str(profile.parent)], {"workloads": {"scale": "0.5"}})
        assert label == str(profile)
        assert data == {"testbed": "ci", "workloads": {"scale": 0.5, "flag": True}}

    def test_profile_config_as_a_list_of_key_values(self, tmp_path):
        profile = write(tmp_path / "p" / "config.yaml", {"config": ["testbed=ci", "count=3", "workloads={seed: 7}"]})
        label, data = overrides(["snakemake", f"--profile={profile.parent}"], {})
        assert data == {"testbed": "ci", "count": 3, "workloads": {"seed": 7}}

    def test_profile_config_list_entry_without_a_key(self, tmp_path):
        profile = write(tmp_path / "p" / "config.yaml", {"config": ["testbed=ci", "=3"]})
        with pytest.raises(ConfigError, match=r"p/config.yaml: config: '=3': the key must start with a letter or _$"):
            overrides(["snakemake", f"--profile={profile.parent}"], {})

    def test_profile_from_the_environment(self, tmp_path):
        profile = write(tmp_path / "p" / "config.yaml", {"config": {"testbed": "aws"}})
        label, data = overrides(["snakemake", "-n"], {}, environ={"SNAKEMAKE_PROFILE": str(profile.parent)})
        assert (label, data) == (str(profile), {"testbed": "aws"})

    def test_configfile(self):
        label, data = overrides(["snakemake", "--configfile", "extra.yaml", "-n"], {"a": 1})
        assert (label, data) == ("extra.yaml", {"a": 1})

    def test_configfile_with_a_profile_keeps_both_types_and_the_profile_wins(self, tmp_path):
        profile = write(tmp_path / "p" / "config.yaml", {"config": {"analysis": {"with_runs": False}, "testbed": "local"}})
        extra = write(tmp_path / "extra.yaml", {"published": {"mirror": "/m"}, "testbed": "ci", "analysis": {"x": 2}})
        # Snakemake's own merge: the profile's nested value as a string
        given = {"published": {"mirror": "/m"}, "testbed": "local", "analysis": {"with_runs": "False"}}
        label, data = overrides(["snakemake", "--profile", str(profile.parent), "--configfile", str(extra)], given)
        assert data == {"published": {"mirror": "/m"}, "testbed": "local", "analysis": {"x": 2, "with_runs": False}}
        assert str(extra) in label and str(profile) in label

    def test_profile_config_of_the_wrong_shape(self, tmp_path):
        profile = write(tmp_path / "p" / "config.yaml", {"config": "testbed=ci"})
        with pytest.raises(ConfigError, match=r"config: expected a mapping or a list of key=value, got string$"):
            overrides(["snakemake", "--profile", str(profile.parent)], {})
