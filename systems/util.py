"""Small shared helpers: errors, atomic writes, repository paths, versions, the stage's config."""
from __future__ import annotations

import copy
import json
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SCHEMA = Path(__file__).resolve().parent / "config.schema.yaml"


class SystemsError(RuntimeError):
    """A launcher failure with a one-line, user-facing message."""


def root() -> Path:
    return Path(os.environ.get("STREAMBENCH_ROOT") or REPO)


def cache_dir() -> Path:
    return Path(os.environ.get("STREAMBENCH_CACHE") or (root() / ".cache"))


def atomic_write_text(path: Path, text: str) -> None:
    """Write text to path via a temporary file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def versions(pom: Path | None = None) -> dict[str, str]:
    """kafka/pulsar/log4j/pravega versions (and pravega.bookkeeper, the bookies' BookKeeper) from the root pom.xml's
    properties (the only place they live)."""
    pom = pom or root() / "pom.xml"
    try:
        tree = ET.parse(pom)
    except (OSError, ET.ParseError) as e:
        raise SystemsError(f"{pom}: cannot read the version properties ({e})") from None
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    out = {}
    for key in ("kafka", "pulsar", "log4j", "pravega", "pravega.bookkeeper"):
        el = tree.getroot().find(f"m:properties/m:{key}.version", ns)
        if el is None or not (el.text or "").strip():
            raise SystemsError(f"{pom}: properties.{key}.version is missing")
        out[key] = el.text.strip()
    return out


def _defaults(schema: dict) -> Any:
    if schema.get("type") == "object":
        d = copy.deepcopy(schema.get("default", {}))
        for k, sub in schema.get("properties", {}).items():
            if k not in d:
                dv = _defaults(sub)
                if dv is not None:
                    d[k] = dv
        return d
    return copy.deepcopy(schema.get("default"))


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v)
        return out
    return over


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    """The `systems` section of a config file (default env/config.yaml if present), validated against
    systems/config.schema.yaml and completed with the schema's defaults.

    The file may hold the whole project config (a top-level `systems:` key) or only the section.
    """
    import jsonschema

    schema = yaml.safe_load(SCHEMA.read_text())
    section: dict = {}
    src = "(defaults)"
    p = Path(path) if path else root() / "env" / "config.yaml"
    if path or p.exists():
        try:
            doc = yaml.safe_load(p.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise SystemsError(f"{p}: cannot read config ({str(e).splitlines()[0]})") from None
        src = str(p)
        if not isinstance(doc, dict):
            raise SystemsError(f"{p}: config must be a mapping")
        top_keys = {"testbed", "published", "hw_probes", "systems", "workloads", "analysis", "paper"}
        section = doc.get("systems", {}) if (set(doc) & top_keys) else doc
        section = section or {}
    try:
        jsonschema.validate(section, schema)
    except jsonschema.ValidationError as e:
        where = ".".join(str(x) for x in e.absolute_path) or "(section)"
        raise SystemsError(f"{src}: systems.{where}: {e.message}") from None
    cfg = _merge(_defaults(schema), section)
    cfg["_source"] = src
    return cfg


def resolve(p: str | Path) -> Path:
    p = Path(p)
    return p if p.is_absolute() else root() / p
