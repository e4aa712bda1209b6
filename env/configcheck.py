"""Validation of the Snakemake config against env/config.schema.yaml, with one-line errors.

The root schema composes each stage's `<stage>/config.schema.yaml` through `$ref`. The config that a
run sees is env/config.yaml, overlaid by the `config:` of the profile in use, or by `--config`/`--configfile`
on the command line. Each error names the key path and the file that set it::

    config error: env/profiles/ci/config.yaml: workloads.scael: unknown key (allowed: scale)

`check()` is the entry point the Snakefile calls; it returns the config with every default filled in.
`lint_schema()` checks the schema itself (type, default and description on every property, closed objects).
"""

from __future__ import annotations

import copy
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
ROOT_SCHEMA = ROOT / "env" / "config.schema.yaml"
BASE_CONFIG = ROOT / "env" / "config.yaml"
# environment variable through which the Snakefile hands the checked config to the jobs Snakemake spawns
HANDOVER = "STREAMBENCH_CHECKED_CONFIG"

_JSON_TYPE = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


class ConfigError(Exception):
    """A config or schema problem, as the one line that is shown to the user."""


def _rel(path: Path | str) -> str:
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def load_yaml(path: Path, what: str = "file") -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except FileNotFoundError:
        raise ConfigError(f"config error: {_rel(path)}: {what} not found") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"config error: {_rel(path)}:{where}: invalid YAML: {problem}") from None


def load_schema(path: Path = ROOT_SCHEMA) -> dict:
    """The root schema with every `$ref` to a file inlined (sibling keys of the `$ref` are kept)."""

    def inline(node: Any, base: Path, seen: tuple[Path, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                target = (base.parent / ref).resolve()
                if target in seen:
                    raise ConfigError(f"config error: {_rel(base)}: $ref {ref}: circular reference")
                loaded = load_yaml(target, "schema")
                if not isinstance(loaded, dict):
                    raise ConfigError(f"config error: {_rel(target)}: schema is not a mapping")
                merged = inline(loaded, target, seen + (target,))
                merged.pop("$schema", None)
                for k, v in node.items():
                    if k != "$ref":
                        merged[k] = inline(v, base, seen)
                return merged
            return {k: inline(v, base, seen) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v, base, seen) for v in node]
        return node

    path = Path(path).resolve()
    schema = load_yaml(path, "schema")
    if not isinstance(schema, dict):
        raise ConfigError(f"config error: {_rel(path)}: schema is not a mapping")
    return inline(schema, path, (path,))


def fill_defaults(schema: Mapping, config: Any) -> Any:
    """A copy of `config` with each absent property set to its schema default, recursively."""
    if not isinstance(config, dict) or schema.get("type") not in ("object", None):
        return config
    out = copy.deepcopy(config)
    for key, sub in (schema.get("properties") or {}).items():
        if key not in out and "default" in sub:
            out[key] = copy.deepcopy(sub["default"])
        if key in out:
            out[key] = fill_defaults(sub, out[key])
    return out


def _has_path(data: Any, path: Sequence) -> bool:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return False
    return True


def _json_type(value: Any) -> str:
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(error: jsonschema.ValidationError) -> tuple[list, str]:
    """(key path, message) of one validation error."""
    path = list(error.absolute_path)
    v = error.validator
    if v == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted((error.schema.get("properties") or {}).keys())
        extra = sorted(k for k in error.instance if k not in (error.schema.get("properties") or {}))
        allowed_text = ", ".join(allowed) if allowed else "none"
        return path + [extra[0]], f"unknown key (allowed: {allowed_text})"
    if v == "type":
        want = error.validator_value
        want_text = " or ".join(want) if isinstance(want, list) else want
        return path, f"expected {want_text}, got {_json_type(error.instance)} {_short(error.instance)}"
    if v == "enum":
        return path, f"{_short(error.instance)} is not one of {', '.join(map(str, error.validator_value))}"
    if v == "required":
        return path, error.message.replace("\n", " ")
    return path, f"{_short(error.instance)}: {v} {_short(error.validator_value)} not met"


def _dotted(path: Iterable) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def validate(config: Any, schema: Mapping, sources: Sequence[tuple[str, Any]]) -> None:
    """Raise ConfigError for the first problem (by key path), naming the last source that set that key."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(config),
        key=lambda e: ([str(p) for p in e.absolute_path], e.validator != "additionalProperties"),
    )
    if not errors:
        return
    path, message = _describe(errors[0])
    origin = sources[-1][0] if sources else "config"
    # the last source that sets the key names it (later sources override earlier ones); for a key that no source
    # sets (a problem of a filled-in default), the last source that sets its deepest existing parent
    for label, data in reversed(sources):
        if _has_path(data, path):
            origin = label
            break
    else:
        for n in range(len(path) - 1, -1, -1):
            found = [label for label, data in sources if _has_path(data, path[:n])]
            if found:
                origin = found[-1]
                break
    raise ConfigError(f"config error: {origin}: {_dotted(path)}: {message}")


def check(
    base: tuple[str, Any],
    override: tuple[str, Any] | None = None,
    schema_path: Path = ROOT_SCHEMA,
) -> dict:
    """Validate the base (label, mapping) overlaid by the override (label, mapping); return the merged
    config with every default filled in."""
    schema = load_schema(schema_path)
    base_label, base_data = base
    if base_data is None:
        base_data = {}
    if not isinstance(base_data, dict):
        raise ConfigError(f"config error: {base_label}: (top level): expected a mapping, got {_json_type(base_data)}")
    sources = [(base_label, base_data)]
    merged = copy.deepcopy(base_data)
    if override is not None and override[1]:
        sources.append(override)
        _update(merged, override[1])
    validate(merged, schema, sources)
    filled = fill_defaults(schema, merged)
    validate(filled, schema, [(f"defaults of {_rel(schema_path)} (or a stage schema it includes)", filled)])
    return filled


class _NoDates(yaml.SafeLoader):
    """YAML's safe types without its timestamps: a config value such as 2026-11-24 stays the string it was."""


_NoDates.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


_KEY = re.compile(r"[a-zA-Z_][\w-]*\w$")  # what Snakemake's --config accepts as a key


def _key_values(entries: Sequence[str]) -> dict:
    """`key=value` entries (--config, or a profile's `config:` list) as Snakemake reads them, but with each value's
    YAML types: Snakemake's own parser reads nested values with YAML's BaseLoader, every scalar a string."""
    out: dict = {}
    for entry in entries:
        key, sep, text = entry.partition("=")
        if not sep:
            raise ValueError(f"{entry!r}: expected key=value")
        if not _KEY.match(key):
            raise ValueError(f"{entry!r}: the key must start with a letter or _")
        try:
            value = yaml.load(text, Loader=_NoDates) if text != "" else None
        except yaml.YAMLError:
            value = text
        _update(out, {key: value})
    return out


def _update(config: dict, overwrite: Mapping) -> None:
    """Recursive overlay, the same as snakemake.utils.update_config."""
    for key, value in overwrite.items():
        if isinstance(value, Mapping) and isinstance(config.get(key), dict):
            _update(config[key], value)
        else:
            config[key] = copy.deepcopy(value)


def overrides(
    argv: Sequence[str], snakemake_overrides: Mapping | None, environ: Mapping[str, str] = os.environ
) -> tuple[str, Any]:
    """(label, data) of the overrides of this snakemake call: the command line, a --configfile, or a profile.

    Snakemake replaces a profile's `config:` entirely when `--config` is given on the command line, and it
    turns nested values of a profile's `config:` into strings; for a profile, the mapping is therefore read
    again from the profile file itself, with its YAML types.
    """
    args = list(argv)
    given = dict(snakemake_overrides or {})

    def values(*flags: str, many: bool = False) -> list[str]:
        """The values given to an option: one per occurrence, or all up to the next option (nargs=+)."""
        found = []
        for i, a in enumerate(args):
            for flag in flags:
                if a == flag:
                    j = i + 1
                    while j < len(args) and not args[j].startswith("-"):
                        found.append(args[j])
                        j += 1
                        if not many:
                            break
                elif a.startswith(flag + "="):
                    found.append(a.split("=", 1)[1])
        return found

    if any(a in ("--config", "-C") or a.startswith("--config=") for a in args):
        # Snakemake reads `k={a: 3}` with YAML's BaseLoader: every nested scalar becomes a string. The entries are
        # read again here with their YAML types and laid over what Snakemake merged (a --configfile among it).
        try:
            typed = _key_values(values("--config", "-C", many=True))
        except ValueError as e:
            raise ConfigError(f"config error: command line: --config: {e}") from None
        merged = copy.deepcopy(given)
        _update(merged, typed)
        return "command line", merged
    files = values("--configfile", "--configfiles", many=True)
    profiles = values("--profile") or ([environ["SNAKEMAKE_PROFILE"]] if environ.get("SNAKEMAKE_PROFILE") else [])
    if files and profiles:
        # a profile's `config:` is --config to Snakemake: it wins over every --configfile; both with their YAML types
        label, section = _profile_config(profiles, given)
        merged: dict = {}
        for f in files:
            data = load_yaml(Path(f), "--configfile")
            if data is not None and not isinstance(data, dict):
                raise ConfigError(f"config error: {_rel(f)}: (top level): expected a mapping, got {_json_type(data)}")
            _update(merged, data or {})
        _update(merged, section)
        return f"{', '.join(_rel(f) for f in files)} + {label}", merged
    if files:
        return (_rel(files[-1]) if len(files) == 1 else "command line (--configfile)"), given
    if not profiles:
        return "command line", given
    return _profile_config(profiles, given)


def _profile_config(profiles: Sequence[str], given: Mapping) -> tuple[str, Any]:
    """(label, mapping) of the `config:` of the last of these profiles that has one, read with its YAML types."""
    from snakemake.cli import get_profile_dir

    # several --profile: later ones override the top-level keys of earlier ones, `config` among them
    path, data = None, None
    for name in reversed(profiles):
        found = get_profile_dir(name)
        if found is None:
            continue
        path = Path(os.path.realpath(found[1]))
        data = load_yaml(path, "profile")
        if isinstance(data, dict) and "config" in data:
            break
    if path is None:
        return f"profile {profiles[-1]}", given
    section = data.get("config") if isinstance(data, dict) else None
    if isinstance(section, list):
        try:
            section = _key_values([str(entry) for entry in section])
        except ValueError as e:
            raise ConfigError(f"config error: {_rel(path)}: config: {e}") from None
    if section is not None and not isinstance(section, dict):
        raise ConfigError(
            f"config error: {_rel(path)}: config: expected a mapping or a list of key=value, got {_json_type(section)}"
        )
    return _rel(path), section or {}


def lint_schema(schema: Mapping, where: str = "") -> list[str]:
    """Problems of the schema itself: each property needs type, default, description; objects are closed
    (additionalProperties false, or a schema for the values of a map)."""
    problems: list[str] = []
    if schema.get("type") == "object" or "properties" in schema:
        # closed (false) or a typed map (a schema for the values); open objects let typos through
        if schema.get("additionalProperties", True) is True:
            problems.append(f"{where or '(top level)'}: object without additionalProperties: false")
        for key, sub in (schema.get("properties") or {}).items():
            path = f"{where}.{key}" if where else key
            for field in ("type", "default", "description"):
                if field not in sub:
                    problems.append(f"{path}: property without {field}")
            problems.extend(lint_schema(sub, path))
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m env.configcheck [--profile NAME|DIR]`: validate env/config.yaml (+ the profile's `config:`)
    and print the config with every default filled in."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        base = (_rel(BASE_CONFIG), load_yaml(BASE_CONFIG))
        over = overrides(["snakemake", *argv], {}, environ={}) if argv else None
        if argv and over[0].startswith("profile "):
            raise ConfigError(f"config error: {over[0]}: profile not found (looked in env/profiles via XDG_CONFIG_DIRS)")
        filled = check(base, over)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    yaml.safe_dump(filled, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
