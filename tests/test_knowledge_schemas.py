"""knowledge/kb.toml and knowledge/signatures.toml against their JSON
Schemas (sarsleuth/schema/), which editors use to check them as they are
written (the ``#:schema`` line heading each file)."""
from __future__ import annotations

import copy
import json
from importlib import resources

import pytest
from jsonschema import Draft202012Validator

from sarsleuth.knowledge import knowledge_base
from sarsleuth.knowledge.signatures import definitions_text
from sarsleuth.model import SEVERITIES

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore

FILES = {"kb.toml": "kb.schema.json", "signatures.toml": "signatures.schema.json"}


def schema(name: str) -> dict:
    return json.loads(resources.files("sarsleuth.schema").joinpath(name).read_text("utf-8"))


def document(name: str) -> dict:
    return tomllib.loads(resources.files("sarsleuth.knowledge").joinpath(name).read_text("utf-8"))


def errors(doc: dict, schema_name: str) -> list[str]:
    validator = Draft202012Validator(schema(schema_name))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("name", FILES)
def test_the_knowledge_files_are_valid_and_name_their_schema(name):
    Draft202012Validator.check_schema(schema(FILES[name]))
    assert errors(document(name), FILES[name]) == []
    first = resources.files("sarsleuth.knowledge").joinpath(name).read_text("utf-8").splitlines()[0]
    assert first == f"#:schema ../schema/{FILES[name]}"


def test_the_schemas_catch_what_the_readers_would_miss():
    """A misspelt key is silently ignored by the code that reads the file:
    the schema names it."""
    kb = copy.deepcopy(knowledge_base())
    kb["detector"]["syn-flood"]["recommendation"][0]["efect"] = 4
    kb["detector"]["syn-flood"]["burst"]["serverities"] = [[3, "high"]]
    kb["detector"]["socket-memory"]["burst"]["values"] = {"field": "port", "text": "{}"}   # besides counts
    found = errors(kb, "kb.schema.json")
    assert any("detector/syn-flood/recommendation/0" in e and "'efect'" in e for e in found), found
    assert any("detector/syn-flood/burst" in e and "'serverities'" in e for e in found), found
    assert any(e.startswith("detector/socket-memory/burst") for e in found), found
    signatures = tomllib.loads(definitions_text())
    signatures["signature"][0]["pattens"] = signatures["signature"][0].pop("patterns")
    found = errors(signatures, "signatures.schema.json")
    # the unknown key, and a definition with neither patterns nor in_report
    assert [e.split(":")[0] for e in found] == ["signature/0", "signature/0"] and "'pattens'" in found[0], found


def test_closed_vocabularies_agree_with_the_code_and_data():
    """The schemas list severities and impacts; the code and kb.toml say
    what they are."""
    kb = schema("kb.schema.json")["$defs"]
    assert kb["severity"]["enum"] == SEVERITIES
    assert schema("signatures.schema.json")["$defs"]["signature"]["properties"]["severity"]["enum"] == SEVERITIES
    assert sorted(kb["impact"]["enum"]) == sorted(knowledge_base()["impact"])
