"""Turning a model spec into a chat-model client: OpenAI, any OpenAI-compatible server,
a provider of langchain's `init_chat_model`, or the embedded llama.cpp server.

Calls to a server on this machine are bounded: replies are capped in tokens, llama.cpp
servers get sampling settings that stop degenerate repetition, each request has a timeout
sized from the cap, and neither the client nor the loops resend a request that timed out.
The profile that picks a loop's tool mode is read from the server when it says what the
model supports (`detect_server`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel, ModelProfile
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from loopgraphs.models.local_server import LocalServer, get_local_server
from loopgraphs.models.loopback import is_loopback_url
from loopgraphs.models.probe import ServerInfo, detect_server
from loopgraphs.models.spec import ModelSpec, bad_spec, parse_spec

DEFAULT_MODEL_ENV = "LOOPGRAPHS_MODEL"
SERVER_API_KEY_ENV = "LOOPGRAPHS_API_KEY"
MAX_TOKENS_ENV = "LOOPGRAPHS_MAX_TOKENS"
LOCAL_API_KEY = "local"
PLACEHOLDER_API_KEY = "not-needed"

DEFAULT_TIMEOUT_SECONDS = 120.0  # per request to a remote server
DEFAULT_LOCAL_MAX_TOKENS = 512  # cap per reply on llama.cpp and local servers
LOCAL_TIMEOUT_BASE_SECONDS = 30.0  # room for reading a long prompt
LOCAL_SECONDS_PER_TOKEN = 0.5  # per GB of weights; SmolLM2 needs ~0.01 s on 2 idle cores

# Extra sampling fields of llama.cpp's OpenAI endpoint, sent with every request to a
# llama.cpp server: DRY ("don't repeat yourself") sampling. A token that would extend a
# repeat of n >= 16 tokens of the last 256 loses 0.8 x 1.75^(n - 16) in logits; only
# newlines, colons and quotes break sequences (llama.cpp's own list also has `*`, which
# arithmetic loops are full of). The measurements on SmolLM2-135M that chose these, and
# why `repeat_penalty` stays at 1.0, are in docs/pages/models.md.
LLAMACPP_SAMPLING: dict[str, object] = {
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 16,
    "dry_penalty_last_n": 256,
    "dry_sequence_breakers": ["\n", ":", '"'],
}


LLAMACPP_PROFILE: ModelProfile = {"tool_calling": False, "structured_output": True}


def local_request_timeout(max_tokens: int, model_bytes: int | None = None) -> float:
    """Timeout in seconds for one request to a local server, sized from its token cap.

    It allows `LOCAL_TIMEOUT_BASE_SECONDS` (30 s) for reading the prompt plus
    `LOCAL_SECONDS_PER_TOKEN` (0.5 s) per capped token and per GB of weights, counting at
    least 1 GB (generation on a CPU slows down in proportion to the weights it reads):
    286 s for the bundled SmolLM2 at 512 tokens. SmolLM2 generates about 120 tokens/s on
    2 idle cores, so the cap, not the timeout, ends a runaway reply (in about 5 s); the
    timeout is the backstop for a server that stalls, and still holds on a machine so
    busy with other work that SmolLM2 fell to 2 tokens/s. A model of unknown size counts
    as 1 GB; pass `timeout=` for a big model on a slow machine.

    Args:
        max_tokens: Cap on generated tokens per request.
        model_bytes: Size of the model's weights, if known.

    Returns:
        The timeout in seconds.
    """
    gigabytes = max(1.0, (model_bytes or 0) / 1e9)
    return LOCAL_TIMEOUT_BASE_SECONDS + max_tokens * gigabytes * LOCAL_SECONDS_PER_TOKEN


def _env_max_tokens() -> int | None:
    """The cap set by `LOOPGRAPHS_MAX_TOKENS`, if any."""
    text = os.environ.get(MAX_TOKENS_ENV, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{MAX_TOKENS_ENV} must be a whole number, got {text!r}") from None


def _check_settings(
    temperature: float,
    max_tokens: int | None,
    timeout: float | None,
    sampling: Mapping[str, object] | None,
    profile: ModelProfile | None,
) -> None:
    """Raise ValueError or TypeError for a setting out of range or of the wrong type."""
    if not 0.0 <= temperature <= 2.0:
        raise ValueError(f"temperature must be between 0 and 2, got {temperature}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
    for name, value in (("sampling", sampling), ("profile", profile)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a dict, got {type(value).__name__}")


def local_chat_model(
    server: LocalServer,
    *,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout: float | None = None,
    sampling: Mapping[str, object] | None = None,
    profile: ModelProfile | None = None,
) -> ChatOpenAI:
    """Build a chat model talking to a running `LocalServer`.

    The profile comes from the server's `GET /props`: native tool calling when the model's
    chat template supports it (the bundled SmolLM2's does not, so tool-using graphs use
    grammar-constrained JSON), native structured output, and the context size.

    Args:
        server: A started server.
        temperature: Sampling temperature.
        max_tokens: Maximum tokens generated per call; `None` takes `LOOPGRAPHS_MAX_TOKENS`
            or `DEFAULT_LOCAL_MAX_TOKENS` (512).
        timeout: Request timeout in seconds; `None` sizes it from the cap and the model
            file (`local_request_timeout`).
        sampling: llama.cpp sampling fields merged over `LLAMACPP_SAMPLING`.
        profile: Profile keys that replace the detected ones; when given, the server is
            not asked.

    Returns:
        A `ChatOpenAI` bound to the server's `/v1` routes that never retries by itself and
        reports usage when streaming.
    """
    cap = _env_max_tokens() if max_tokens is None else max_tokens
    if cap is None:
        cap = DEFAULT_LOCAL_MAX_TOKENS
    _check_settings(temperature, cap, timeout, sampling, profile)
    base_url = f"{server.url}/v1"
    merged = ModelProfile(**LLAMACPP_PROFILE, max_input_tokens=server.n_ctx)
    if profile is None:
        merged.update(detect_server(base_url, server.model_name).profile)
    else:
        merged.update(profile)
    return _chat_openai(
        model=server.model_name,
        api_key=LOCAL_API_KEY,
        base_url=base_url,
        temperature=temperature,
        max_tokens=cap,
        timeout=timeout or local_request_timeout(cap, server.model_bytes),
        max_retries=0,
        profile=merged,
        extra_body={**LLAMACPP_SAMPLING, **(sampling or {})},
    )


def _chat_openai(
    *,
    model: str,
    api_key: str,
    base_url: str | None,
    temperature: float,
    max_tokens: int | None,
    timeout: float,
    max_retries: int,
    profile: ModelProfile | None = None,
    extra_body: Mapping[str, object] | None = None,
) -> ChatOpenAI:
    """Build a `ChatOpenAI` that reports token usage when streaming.

    Without `profile`, ChatOpenAI looks one up from the model name when it knows it.
    `extra_body` fields are added to every request's JSON body.
    """
    return ChatOpenAI(
        model=model,
        api_key=SecretStr(api_key),
        base_url=base_url,
        temperature=temperature,
        max_completion_tokens=max_tokens,
        timeout=timeout,
        max_retries=max_retries,
        stream_usage=True,
        profile=profile,
        extra_body=dict(extra_body) if extra_body else None,
    )


def _server_model(
    url: str,
    model: str,
    *,
    api_key: str,
    llamacpp: bool,
    temperature: float,
    max_tokens: int | None,
    timeout: float | None,
    max_retries: int,
    sampling: Mapping[str, object] | None,
    profile: ModelProfile | None,
) -> ChatOpenAI:
    """A client for a server somebody else runs, set up from what it says about itself."""
    local = is_loopback_url(url)
    info = (
        ServerInfo("unknown") if profile is not None else detect_server(url, model, api_key=api_key)
    )
    is_llamacpp = llamacpp or info.kind == "llama.cpp"
    merged = ModelProfile(**LLAMACPP_PROFILE) if llamacpp else ModelProfile()
    merged.update(info.profile)
    merged.update(profile or {})
    if max_tokens is None and (is_llamacpp or local):
        max_tokens = DEFAULT_LOCAL_MAX_TOKENS
    if timeout is None:
        timeout = (
            local_request_timeout(max_tokens, info.model_bytes)
            if local and max_tokens is not None
            else DEFAULT_TIMEOUT_SECONDS
        )
    extra = {**LLAMACPP_SAMPLING, **(sampling or {})} if is_llamacpp else sampling
    return _chat_openai(
        model=model,
        api_key=api_key,
        base_url=url,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=0 if local else max_retries,
        profile=merged or None,
        extra_body=extra,
    )


def load_model(
    spec: str | BaseChatModel | None = None,
    *,
    base_url: str | None = None,
    gguf: str | os.PathLike[str] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout: float | None = None,
    max_retries: int = 0,
    sampling: Mapping[str, object] | None = None,
    profile: ModelProfile | None = None,
) -> BaseChatModel:
    """Resolve a model spec into a chat model.

    With no spec, `base_url` or `gguf` pick the server; otherwise the `LOOPGRAPHS_MODEL`
    environment variable is used, and failing that the bundled local model.

    Every call to a llama.cpp server (`"local"`, `"gguf:"`, `"llamacpp:"`, or a URL whose
    `/props` identifies llama.cpp) or to any server on a loopback address is bounded:

    * replies are capped at `DEFAULT_LOCAL_MAX_TOKENS` (512) tokens unless `max_tokens` or
      `LOOPGRAPHS_MAX_TOKENS` says otherwise;
    * llama.cpp servers get `LLAMACPP_SAMPLING`, DRY ("don't repeat yourself") sampling,
      chosen from measurements on SmolLM2 (see the constant); what DRY does not end
      (counting upwards, ever new sums) the cap does;
    * a local server's request times out after `local_request_timeout(cap)` seconds (286 s
      for SmolLM2 at 512 tokens, a backstop: the cap ends a runaway in about 5 s), and
      its client never retries; the loops' default retry policy does not resend a local
      request that timed out either, because on this machine a timeout means a runaway
      reply or a stalled server, not a network fault.

    A llama.cpp server on another machine gets the cap and the sampling but a 120 s
    timeout and `max_retries`; other remote servers keep the 120 s timeout, no default
    cap and `max_retries`.

    The profile (`tool_calling`, `structured_output`), which drives the loops' `auto` tool
    mode, is asked of the server for URL specs and the embedded server
    (`detect_server`): native tool calls where llama.cpp or Ollama report support,
    grammar-constrained JSON otherwise; unknown servers get ChatOpenAI's own lookup by
    model name. `profile=` replaces the detected keys and skips the question.

    Args:
        spec: A chat model (returned as is), `"local"`, `"gguf:<path>"`, `"openai:<model>"`,
            `"llamacpp:<url>"` or an `http(s)://` URL of an OpenAI-compatible server with an
            optional `#<model>` suffix.
        base_url: URL of an OpenAI-compatible server; use instead of `spec`.
        gguf: GGUF file for the embedded server; use instead of `spec` or with `"local"`.
        temperature: Sampling temperature in [0, 2].
        max_tokens: Maximum tokens generated per call (>= 1); `None` takes
            `LOOPGRAPHS_MAX_TOKENS`, then the local default above (none for remote servers).
        timeout: Request timeout in seconds; `None` picks the default above.
        max_retries: Retries done by the OpenAI client of a remote server; the graphs retry
            transient errors themselves, hence 0. Clients of local servers never retry.
        sampling: Extra fields for each request body; for llama.cpp servers they are merged
            over `LLAMACPP_SAMPLING` (e.g. `{"dry_multiplier": 0}` turns DRY off).
        profile: Profile keys, e.g. `{"tool_calling": True}`, that replace what the server
            reports; when given, the server is not asked.

    Returns:
        The chat model.

    Raises:
        ValueError: If the spec is unknown, arguments conflict, a setting is out of range,
            or `OPENAI_API_KEY` is missing for an `openai:` spec.
        TypeError: If `sampling` or `profile` is not a dict.
        FileNotFoundError: If a GGUF file is missing.
        RuntimeError: If the embedded server fails to start.
    """
    if isinstance(spec, BaseChatModel):
        return spec
    if max_tokens is None:
        max_tokens = _env_max_tokens()
    _check_settings(temperature, max_tokens, timeout, sampling, profile)
    chosen = _chosen_spec(spec, base_url, gguf)
    if chosen.kind in ("local", "gguf"):
        server = get_local_server(gguf if chosen.kind == "local" else chosen.target)
        return local_chat_model(
            server,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout,
            sampling=sampling,
            profile=profile,
        )
    if chosen.kind in ("server", "llamacpp"):
        llamacpp = chosen.kind == "llamacpp"
        api_key = LOCAL_API_KEY if llamacpp else _server_api_key()
        return _server_model(
            chosen.target,
            chosen.model,
            api_key=api_key,
            llamacpp=llamacpp,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout,
            max_retries=max_retries,
            sampling=sampling,
            profile=profile,
        )
    if chosen.kind == "openai":
        return _chat_openai(
            model=chosen.model,
            api_key=_openai_key(chosen),
            base_url=None,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout or DEFAULT_TIMEOUT_SECONDS,
            max_retries=max_retries,
            profile=ModelProfile(**profile) if profile is not None else None,
            extra_body=sampling,
        )
    return _provider_model(chosen, temperature=temperature, max_tokens=max_tokens)


def _chosen_spec(
    spec: object, base_url: str | None, gguf: str | os.PathLike[str] | None
) -> ModelSpec:
    """The spec ``load_model`` was given, or the one its ``base_url``/``gguf`` or the
    environment stand for, read.

    Raises:
        ValueError: The arguments conflict, or the spec is unknown.
    """
    if base_url is not None and (spec is not None or gguf is not None):
        raise ValueError("base_url cannot be combined with a spec or gguf; pass only one.")
    if base_url is not None:
        spec = base_url
    elif spec is None:
        spec = "local" if gguf is not None else os.environ.get(DEFAULT_MODEL_ENV, "local")
    if not isinstance(spec, str):
        raise bad_spec(spec)
    chosen = parse_spec(spec)
    if gguf is not None and chosen.kind != "local":
        raise ValueError(f"gguf can only be combined with the 'local' spec, got {chosen.text!r}.")
    return chosen


def _server_api_key() -> str:
    """The key sent to an OpenAI-compatible server: ``LOOPGRAPHS_API_KEY`` or a placeholder."""
    return os.environ.get(SERVER_API_KEY_ENV) or PLACEHOLDER_API_KEY


def _openai_key(chosen: ModelSpec) -> str:
    """``OPENAI_API_KEY``, which an ``openai:`` spec needs.

    Raises:
        ValueError: It is not set.
    """
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        raise ValueError(f"Model {chosen.text!r} needs OPENAI_API_KEY; set it in the environment.")
    return key


def _provider_model(
    chosen: ModelSpec, *, temperature: float, max_tokens: int | None
) -> BaseChatModel:
    """A ``provider:model`` spec through langchain's ``init_chat_model``.

    Raises:
        ValueError: The provider is unknown, or its integration package is not installed
            (the message names the package to install).
    """
    from langchain.chat_models import init_chat_model

    settings: dict[str, Any] = {"temperature": temperature}
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens
    try:
        return init_chat_model(chosen.model, model_provider=chosen.provider, **settings)
    except ImportError as exc:
        raise ValueError(f"Model spec {chosen.text!r}: {exc}") from exc
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"{first} {bad_spec(chosen.text)}") from exc
