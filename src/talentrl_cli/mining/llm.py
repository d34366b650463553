"""An LLM that writes JSON: a local Hugging Face model, or an OpenAI-compatible server.

Used by `mine.extractor=llm` (skills) and `mine.namer=llm` (talent names). Output is parsed
as the first JSON object in the reply and validated against a pydantic model; a reply that
fails is retried (`mine.llm.retries`) and, if it still fails, counted and replaced by the
offline template result, so a weak model never breaks a mining run.

    talentrl mine mine.extractor=llm mine.llm.kind=smollm2
    talentrl mine mine.namer=llm mine.llm.kind=openai mine.llm.url=http://localhost:8000/v1 mine.llm.name_or_path=qwen
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from talentrl_cli.errors import ConfigError, TalentRLError

T = TypeVar("T", bound=BaseModel)
_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


@dataclass
class JsonStats:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    errors: list[str] = field(default_factory=list)


class JsonWriter:
    """Ask for JSON matching `schema`; retry, then give up with `None` (counted)."""

    def __init__(self, generate: Callable[[str], str], retries: int = 2):
        self.generate = generate
        self.retries = retries
        self.stats = JsonStats()

    def ask(self, prompt: str, schema: type[T]) -> T | None:
        self.stats.requests += 1
        for attempt in range(self.retries + 1):
            reply = self.generate(prompt)
            try:
                return schema.model_validate(_first_json_object(reply))
            except (ValueError, ValidationError) as err:
                if attempt < self.retries:
                    self.stats.retries += 1
                elif len(self.stats.errors) < 5:
                    self.stats.errors.append(f"{type(err).__name__}: {str(err)[:160]}")
        self.stats.failures += 1
        return None


def _first_json_object(text: str) -> Any:
    match = _JSON_OBJECT.search(text)
    if not match:
        raise ValueError("no JSON object in the reply")
    candidate = match.group(0)
    while candidate:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            cut = candidate.rfind("}", 0, len(candidate) - 1)
            candidate = candidate[: cut + 1] if cut > 0 else ""
    raise ValueError("the reply's JSON does not parse")


def make_generator(llm_cfg: Any) -> Callable[[str], str]:
    kind = str(llm_cfg.kind)
    if kind == "openai":
        return _openai_generator(llm_cfg)
    if kind in ("tiny", "smollm2", "hf"):
        return _hf_generator(llm_cfg)
    raise ConfigError(f"mine.llm.kind={kind!r} is not one of tiny, smollm2, hf, openai")


def _hf_generator(llm_cfg: Any) -> Callable[[str], str]:
    import torch

    from talentrl_cli.config import compose
    from talentrl_cli.models import load_policy

    overrides = [f"model={llm_cfg.kind}"]
    if llm_cfg.get("name_or_path"):
        overrides.append(f"model.name_or_path={llm_cfg.name_or_path}")
    model, tokenizer = load_policy(compose(overrides).model)
    max_new = int(llm_cfg.max_new_tokens)

    def generate(prompt: str) -> str:
        messages = [{"role": "user", "content": prompt}]
        inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                               return_tensors="pt", return_dict=True)
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=max_new, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)
        return tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    return generate


def _openai_generator(llm_cfg: Any) -> Callable[[str], str]:
    """Chat completions over HTTP with the standard library (one POST per prompt)."""
    if not llm_cfg.get("url"):
        raise ConfigError("mine.llm.kind=openai needs mine.llm.url", "e.g. mine.llm.url=http://localhost:8000/v1")
    url = str(llm_cfg.url).rstrip("/") + "/chat/completions"
    key = os.environ.get(str(llm_cfg.get("api_key_env") or "OPENAI_API_KEY"), "")

    def generate(prompt: str) -> str:
        body = {"model": llm_cfg.get("name_or_path") or "default", "temperature": 0.0,
                "max_tokens": int(llm_cfg.max_new_tokens),
                "messages": [{"role": "user", "content": prompt}]}
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
            "Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})})
        try:
            with urllib.request.urlopen(request, timeout=float(llm_cfg.get("timeout_s", 60))) as reply:
                return json.load(reply)["choices"][0]["message"]["content"]
        except (OSError, KeyError, json.JSONDecodeError) as err:
            raise TalentRLError(f"LLM endpoint {url} failed: {err}", "check mine.llm.url and the server") from None

    return generate
