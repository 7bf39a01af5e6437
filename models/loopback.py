"""Whether a model, a model spec or a URL is served on this machine.

A timeout from a server on this machine means the model was still generating, not that
the network failed, so calls to it are bounded differently (see `load_model`).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from langchain_core.runnables import Runnable

from loopgraphs.models.introspection import unwrap
from loopgraphs.models.spec import parse_spec

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


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
        try:
            spec = parse_spec(model)
        except ValueError:
            return False
        if spec.kind in ("local", "gguf"):
            return True
        return spec.kind in ("server", "llamacpp") and is_loopback_url(spec.target)
    inner = unwrap(model) if isinstance(model, Runnable) else model
    for attribute in ("openai_api_base", "base_url", "api_base"):
        url = getattr(inner, attribute, None)
        if isinstance(url, str) and url:
            return is_loopback_url(url)
    return False
