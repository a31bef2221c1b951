"""One chat-completions call to an OpenAI-compatible endpoint, with the retries, timeouts and key handling that the
answerer and the judge share. The key is read from the environment variable the settings name, never stored."""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ragpipe.core import backoff_s
from ragpipe.settings import OpenAISettings


class ChatError(RuntimeError):
    """The endpoint gave no usable reply after the allowed attempts; the message says why and how often."""


@dataclass(frozen=True)
class ChatReply:
    text: str
    prompt_tokens: int
    completion_tokens: int


def _post(cfg: OpenAISettings, body: dict[str, Any]) -> dict[str, Any]:
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(cfg.api_key_env) or None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=cfg.timeout_s) as resp:
        return json.loads(resp.read().decode("utf-8"))


def chat(cfg: OpenAISettings, messages: list[dict[str, str]], max_tokens: int | None = None) -> ChatReply:
    """POST /chat/completions at temperature 0; retries 429, 5xx, timeouts and broken connections with exponential
    backoff and jitter. Raises ChatError after the last attempt (or at once for 4xx and malformed replies)."""
    body = {"model": cfg.model, "messages": messages, "temperature": 0, "max_tokens": max_tokens or cfg.max_tokens}
    last = "no attempt made"
    attempt = 0
    for attempt in range(cfg.max_retries + 1):
        retry = False
        try:
            data = _post(cfg, body)
            text = data["choices"][0]["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("choices[0].message.content is not a string")
            usage = data.get("usage") or {}
            return ChatReply(
                text.strip(), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            )
        except urllib.error.HTTPError as exc:
            exc.close()  # release the error response's connection
            last = f"HTTP {exc.code} from {cfg.base_url}"
            retry = exc.code == 429 or exc.code >= 500
            if exc.code in (401, 403):
                last += f" (check the key in ${cfg.api_key_env})"
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            last = f"cannot reach {cfg.base_url}: {getattr(exc, 'reason', exc)}"
            retry = True
        except http.client.HTTPException as exc:  # IncompleteRead, BadStatusLine: not OSErrors
            last = f"broken response from {cfg.base_url}: {exc!r}"
            retry = True
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            last = f"malformed response from {cfg.base_url}: {type(exc).__name__}: {exc}"
        if not retry or attempt == cfg.max_retries:
            break
        time.sleep(backoff_s(attempt))
    raise ChatError(f"{last} after {attempt + 1} attempt(s)")
