"""The embedded llama.cpp server: one per GGUF file for the whole process, on loopback.

The server runs in-process through `xllamacpp`. `get_local_server` starts it on first use
and shares it; the servers it started are stopped at exit (the exit hook is registered
when the first one starts). `embedded_server` finds the running server a chat model talks
to.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from langchain_core.runnables import Runnable

from loopgraphs.models.gguf_file import DEFAULT_GGUF_NAME, existing_gguf, find_default_gguf
from loopgraphs.models.introspection import unwrap
from loopgraphs.process_hooks import at_exit

LOCAL_MODEL_NAME = "smollm2"  # served name of the bundled model; other files use their stem
LOOPBACK_HOST = "127.0.0.1"
HEALTH_TIMEOUT_SECONDS = 60.0
HEALTH_POLL_SECONDS = 0.1


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
        self.gguf = existing_gguf(gguf)
        self.model_name = (
            LOCAL_MODEL_NAME if self.gguf.name == DEFAULT_GGUF_NAME else self.gguf.stem
        )
        self.model_bytes = self.gguf.stat().st_size
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.n_parallel = n_parallel
        self.port = port
        self._server: object = None
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

    The first call also registers `stop_local_servers` to run at exit.

    Args:
        gguf: Path of the GGUF file; defaults to the bundled SmolLM2 model.

    Returns:
        A running `LocalServer`, shared by every caller asking for the same file.

    Raises:
        FileNotFoundError: If the GGUF file is missing.
        RuntimeError: If the server fails to start.
    """
    path = find_default_gguf() if gguf is None else existing_gguf(gguf)
    with _local_servers_lock:
        server = _local_servers.get(path)
        if server is None:
            at_exit(stop_local_servers)
            server = LocalServer(path)
            _local_servers[path] = server
        return server.start()


def stop_local_servers() -> None:
    """Stop every server started by `get_local_server`; runs at exit once one was started."""
    with _local_servers_lock:
        for server in _local_servers.values():
            server.stop()
        _local_servers.clear()


def embedded_server(model: object) -> LocalServer | None:
    """The running llama.cpp server this process started (``"local"`` or
    ``"gguf:<path>"``) that a chat model talks to, or None."""
    if not _local_servers:
        return None
    inner = unwrap(model) if isinstance(model, Runnable) else model
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
