"""Model spec strings are read in one place: ``loopgraphs.models.spec.parse_spec``."""

from __future__ import annotations

import pytest

from loopgraphs.models import is_local_model
from loopgraphs.models.spec import ModelSpec, parse_spec


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("local", ModelSpec("local", "local")),
        (" gguf:/m/a.gguf ", ModelSpec("gguf", "gguf:/m/a.gguf", target="/m/a.gguf")),
        ("openai:gpt-4o-mini", ModelSpec("openai", "openai:gpt-4o-mini", model="gpt-4o-mini")),
        (
            "http://127.0.0.1:8080#qwen",
            ModelSpec("server", "http://127.0.0.1:8080#qwen", "http://127.0.0.1:8080/v1", "qwen"),
        ),
        (
            "https://api.example.com/v1/",
            ModelSpec(
                "server", "https://api.example.com/v1/", "https://api.example.com/v1", "default"
            ),
        ),
        (
            "llamacpp:http://localhost:9000",
            ModelSpec(
                "llamacpp", "llamacpp:http://localhost:9000", "http://localhost:9000/v1", "default"
            ),
        ),
        (
            "anthropic:claude-sonnet-4-5",
            ModelSpec(
                "provider",
                "anthropic:claude-sonnet-4-5",
                model="claude-sonnet-4-5",
                provider="anthropic",
            ),
        ),
    ],
)
def test_each_accepted_form_is_read(text: str, spec: ModelSpec) -> None:
    assert parse_spec(text) == spec


@pytest.mark.parametrize("text", ["banana", "gguf:", "llamacpp:", "", "a b:c"])
def test_an_unknown_spec_names_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"Unknown model spec .*Accepted forms: .*'local'"):
        parse_spec(text)


@pytest.mark.parametrize(
    ("text", "local"),
    [
        ("local", True),
        ("gguf:/m/a.gguf", True),
        ("http://127.0.0.1:8080#m", True),
        ("llamacpp:http://localhost:9000", True),
        ("llamacpp:http://10.0.0.5:9000", False),
        ("https://api.example.com", False),
        ("openai:gpt-4o", False),
        ("banana", False),
    ],
)
def test_where_a_spec_runs_is_read_from_the_same_parse(text: str, local: bool) -> None:
    assert is_local_model(text) is local
