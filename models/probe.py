"""Asking an OpenAI-compatible server what it is and what its model supports.

llama.cpp answers `GET /props`, Ollama `POST /api/show`; what they say sets the profile
that picks a loop's tool mode (`load_model`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

from langchain_core.language_models import ModelProfile

PROBE_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class ServerInfo:
    """What an OpenAI-compatible server says about itself and the model it serves.

    Attributes:
        kind: `"llama.cpp"`, `"ollama"` or `"unknown"`.
        profile: Profile keys the server reported (`tool_calling`, `structured_output`,
            `max_input_tokens`); empty when it reported nothing.
        model_bytes: Size of the model's weights, when the server reports it.
    """

    kind: str
    profile: ModelProfile = field(default_factory=lambda: ModelProfile())
    model_bytes: int | None = None


def _request_json(
    url: str, *, body: Mapping[str, object] | None, api_key: str | None, timeout: float
) -> object:
    """GET (or POST `body` to) `url` and decode the JSON answer.

    An error status or an answer that is not JSON gives None; a server that does not
    answer at all raises (`OSError`), so that the caller stops asking it.
    """
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError:
        return None
    except ValueError:
        return None


def _llamacpp_info(props: dict[str, object], models: object, model: str | None) -> ServerInfo:
    """Read llama.cpp's `/props` (and `/v1/models` for the weights' size)."""
    caps = props.get("chat_template_caps")
    tools = isinstance(caps, dict) and caps.get("supports_tool_calls") is True
    profile = ModelProfile(tool_calling=tools, structured_output=True)
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(n_ctx, int) and n_ctx > 0:
        profile["max_input_tokens"] = n_ctx
    sizes: dict[object, int] = {}
    entries = models.get("data") if isinstance(models, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        meta = entry.get("meta") if isinstance(entry, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("size"), int):
            sizes[entry.get("id")] = meta["size"]
    size = sizes.get(model, next(iter(sizes.values()), None))
    return ServerInfo("llama.cpp", profile, size)


def detect_server(
    base_url: str,
    model: str | None = None,
    *,
    api_key: str | None = None,
    timeout: float = PROBE_TIMEOUT_SECONDS,
) -> ServerInfo:
    """Ask an OpenAI-compatible server what it is and what the model supports.

    llama.cpp's server answers `GET /props` with its chat template's capabilities
    (`chat_template_caps.supports_tool_calls`) and the context size, and always constrains
    JSON schemas with a grammar. Ollama answers `POST /api/show` with the model's
    `capabilities`, which list `"tools"` when it can call tools. Any other server (vLLM,
    a hosted API) gives an unknown result, and the loops' `auto` tool mode then tries
    native tool calls first. A server that cannot be asked (unreachable, too slow, or
    blocking I/O refused, as under `langgraph dev`) also gives an unknown result.

    Args:
        base_url: The server's OpenAI base URL, with or without `/v1`.
        model: The model name, needed by Ollama.
        api_key: Sent as a bearer token when given.
        timeout: Seconds to wait for each answer.

    Returns:
        What was found.
    """
    root = base_url.rstrip("/").removesuffix("/v1")
    ask = partial(_request_json, api_key=api_key, timeout=timeout)
    try:
        props = ask(f"{root}/props", body=None)
        if isinstance(props, dict) and (
            "chat_template_caps" in props or "default_generation_settings" in props
        ):
            try:
                models = ask(f"{root}/v1/models", body=None)
            except OSError:
                models = None
            return _llamacpp_info(props, models, model)
        if model:
            show = ask(f"{root}/api/show", body={"model": model})
            if isinstance(show, dict) and isinstance(show.get("capabilities"), list):
                tools = "tools" in show["capabilities"]
                return ServerInfo(
                    "ollama", ModelProfile(tool_calling=tools, structured_output=True)
                )
    except Exception:  # not being able to ask only means not knowing
        pass
    return ServerInfo("unknown")
