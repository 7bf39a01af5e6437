"""Model spec strings: the one place that reads them.

``parse_spec`` turns ``"local"``, ``"gguf:<path>"``, ``"openai:<model>"``,
``"llamacpp:<url>"``, an ``http(s)://`` URL (with an optional ``#<model>``) or
``"<provider>:<model>"`` into a ``ModelSpec``; ``load_model`` builds the client from it and
``is_local_model`` asks it where the model runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_SERVER_MODEL = "default"

ACCEPTED_SPECS = (
    "a BaseChatModel instance",
    "'local' (embedded llama.cpp with the bundled SmolLM2)",
    "'gguf:<path>' (embedded llama.cpp with that GGUF file)",
    "'openai:<model>' (needs OPENAI_API_KEY)",
    "'http(s)://host[:port][/v1][#<model>]' (any OpenAI-compatible server)",
    "'llamacpp:http(s)://host[:port]' (a running llama.cpp server: schema-constrained JSON)",
    "'<provider>:<model>' for any provider of langchain's init_chat_model "
    "(e.g. 'anthropic:claude-sonnet-4-5', 'ollama:llama3.2'; needs that integration package)",
)

SpecKind = Literal["local", "gguf", "server", "llamacpp", "openai", "provider"]
URL_SCHEMES = ("http://", "https://")


@dataclass(frozen=True)
class ModelSpec:
    """A model spec string, read.

    Attributes:
        kind: ``local`` (the embedded server with the bundled model), ``gguf`` (the
            embedded server with ``target``'s GGUF file), ``server`` (an OpenAI-compatible
            server at ``target``), ``llamacpp`` (a llama.cpp server at ``target``),
            ``openai`` or ``provider`` (``provider``'s model ``model``).
        target: The GGUF path, or the server's OpenAI base URL (ending in ``/v1``); empty
            for ``local``, ``openai`` and ``provider``.
        model: The model's name (``DEFAULT_SERVER_MODEL`` on a server when the spec names
            none); empty for ``local`` and ``gguf``.
        provider: The ``init_chat_model`` provider of a ``provider`` spec.
        text: The spec as given, stripped.
    """

    kind: SpecKind
    text: str
    target: str = ""
    model: str = ""
    provider: str = ""


def parse_spec(spec: str) -> ModelSpec:
    """Read a model spec string.

    Args:
        spec: One of the forms in ``ACCEPTED_SPECS`` (surrounding spaces are ignored).

    Returns:
        The spec, read.

    Raises:
        ValueError: It matches none of the accepted forms (the message lists them).
    """
    text = spec.strip()
    if text == "local":
        return ModelSpec("local", text)
    if text.startswith(URL_SCHEMES):
        url, model = _server_address(text)
        return ModelSpec("server", text, target=url, model=model)
    kind, _, value = text.partition(":")
    value = value.strip()
    if kind == "llamacpp" and value.startswith(URL_SCHEMES):
        url, model = _server_address(value)
        return ModelSpec("llamacpp", text, target=url, model=model)
    if kind == "gguf" and value:
        return ModelSpec("gguf", text, target=value)
    if kind == "openai" and value:
        return ModelSpec("openai", text, model=value)
    if kind and value and kind.replace("_", "").isalnum():
        return ModelSpec("provider", text, model=value, provider=kind)
    raise bad_spec(spec)


def bad_spec(spec: object) -> ValueError:
    """The error for a model spec that matches none of the accepted forms."""
    forms = "; ".join(ACCEPTED_SPECS)
    return ValueError(f"Unknown model spec {spec!r}. Accepted forms: {forms}.")


def _server_address(url: str) -> tuple[str, str]:
    """Split ``url[#model]`` into an OpenAI base URL ending in ``/v1`` and a model name."""
    address, _, model = url.partition("#")
    address = address.rstrip("/")
    if not address.endswith("/v1"):
        address = f"{address}/v1"
    return address, model or DEFAULT_SERVER_MODEL
