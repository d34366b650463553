"""Generation backends behind one interface: `generate` token ids and `score` continuations.

The rollout engine (`talentrl_cli.rollout`) and so eval and RL only talk to a `Backend`:

- `generate(prompts, seeds, params)`: one completion per prompt (token ids, not text, so
  the transcript keeps exactly the tokens the policy sampled). Each row samples from its
  own `torch.Generator` seeded with `seeds[i]`, so a row's tokens do not depend on which
  other rows share its batch: the rollout engine seeds rows from (task, rollout, step), which
  gives common random numbers across talents (DESIGN §2) and batch-size-invariant greedy
  decoding.
- `score(prompts, continuations)`: the summed log-probability of each continuation after its
  prompt, teacher-forced (HF: each prompt encoded once, its continuations on its KV cache).
  Routing uses it to get pi_route(t | x) exactly over every talent label.

`HFBackend` (default) runs a transformers causal LM with left padding and a KV cache. Rows
that finished keep their slot (pad tokens) until the whole batch stops; callers send only the
episodes still running. A prompt that extends an earlier call's prompt and completion (the
next turn of an episode) reuses that row's KV cache (`prefix_cache`), so each turn encodes
only its new tokens. `VLLMBackend` is used when vLLM is installed and a GPU is present
(`make_backend(kind="auto")`); it is import-guarded so CPU machines never import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from talentrl_cli.registry import Registry


@dataclass(frozen=True)
class SamplingParams:
    """Decoding settings shared by every backend; temperature 0 means greedy."""

    max_new_tokens: int = 96
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()  # stop strings, checked on the decoded completion

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


@dataclass
class Completion:
    token_ids: list[int]
    text: str
    finish: str  # eos | stop | length
    logprobs: list[float] = field(default_factory=list)  # of the chosen tokens


class Backend(Protocol):
    tokenizer: Any

    def generate(self, prompts: Sequence[Sequence[int]], seeds: Sequence[int],
                 params: SamplingParams) -> list[Completion]: ...

    def score(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]) -> list[float]: ...


BACKENDS: Registry[Any] = Registry("generation backend")


def make_backend(model: Any, tokenizer: Any, kind: str = "hf", batch_size: int = 16) -> Backend:
    """`kind=auto` picks vLLM when it is installed and a GPU is present, else HF."""
    if kind == "auto":
        kind = "vllm" if vllm_available() else "hf"
    return BACKENDS.get(kind)(model, tokenizer, batch_size=batch_size)


def vllm_available() -> bool:
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return False
    import torch

    return torch.cuda.is_available()


@BACKENDS.register("hf")
class HFBackend:
    """A transformers causal LM: left-padded batches, KV cache, per-row generators."""

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 16, prefix_cache_bytes: int | None = None):
        from talentrl_cli import prefix_cache

        self.model, self.tokenizer, self.batch_size = model, tokenizer, max(1, int(batch_size))
        self.eos_ids = _eos_ids(model, tokenizer)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        # each episode's KV cache, reused by its next turn (see prefix_cache); None: a share of free memory
        if prefix_cache_bytes is None:
            prefix_cache_bytes = prefix_cache.default_budget(self.device)
        self.prefixes = (prefix_cache.PrefixCache(prefix_cache_bytes)
                         if prefix_cache_bytes > 0 and prefix_cache.supported(model) else None)

    def forget(self, histories: Sequence[Sequence[int]] | None = None) -> None:
        """Drop the cached histories of episodes that ended (all of them by default): the
        rollout engine calls it as its episodes end, since those will not be extended again."""
        if self.prefixes is None:
            return
        if histories is None:
            self.prefixes.clear()
        else:
            self.prefixes.discard(histories)

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def generate(self, prompts: Sequence[Sequence[int]], seeds: Sequence[int],
                 params: SamplingParams) -> list[Completion]:
        out: list[Completion] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            out.extend(self._generate_batch(prompts[chunk], seeds[chunk], params))
        return out

    def _generate_batch(self, prompts: Sequence[Sequence[int]], seeds: Sequence[int],
                        params: SamplingParams) -> list[Completion]:
        """Decode until every row ends; a row that ends leaves the batch at once (its cache
        goes to the prefix cache), so one long completion does not keep the whole batch
        decoding: on a CPU a step's cost grows with the rows it carries."""
        import torch

        cache, mask, step_ids = self._start(prompts)
        gens = [torch.Generator().manual_seed(int(s) % (2**63)) for s in seeds]
        rows = [_Row() for _ in prompts]
        live = list(range(len(prompts)))  # batch row j decodes rows[live[j]]
        with torch.inference_mode():
            for _ in range(params.max_new_tokens):
                positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -step_ids.shape[1]:]
                result = self.model(input_ids=step_ids, attention_mask=mask, position_ids=positions,
                                    cache=cache, use_cache=True, logits_to_keep=1)
                cache = result.cache
                logits = result.logits[:, -1, :].float()
                chosen = self._pick(logits, [gens[i] for i in live], [rows[i] for i in live], params)
                ended = {j for j, i in enumerate(live) if rows[i].finish}
                if ended:
                    self._remember(cache, mask, prompts, rows, live, ended)
                    if len(ended) == len(live):
                        break
                    keep = [j for j in range(len(live)) if j not in ended]
                    cache.batch_select_indices(torch.tensor(keep, device=self.device))
                    mask, chosen, live = mask[keep], chosen[keep], [live[j] for j in keep]
                step_ids = chosen.unsqueeze(1).to(self.device)
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            else:
                self._remember(cache, mask, prompts, rows, live, set(range(len(live))))
        return [r.completion(self.tokenizer) for r in rows]

    def _remember(self, cache: Any, mask: Any, prompts: Sequence[Sequence[int]], rows: list[_Row],
                  live: list[int], batch_rows: set[int]) -> None:
        """Store `batch_rows`' histories: the cache holds each prompt + all but the last sampled token."""
        if self.prefixes is None or cache is None:
            return
        entries = {j: ([*prompts[i], *rows[i].ids], len(prompts[i]) + len(rows[i].ids) - 1)
                   for j, i in enumerate(live) if j in batch_rows}
        self.prefixes.store(cache, mask[:, : cache.get_seq_length()], entries)

    def _start(self, prompts: Sequence[Sequence[int]]) -> tuple[Any, Any, Any]:
        """(cache, attention mask, input ids) for the first forward pass: the prompts, or
        only their new tokens on top of the cached histories they extend."""
        import torch

        found = [self.prefixes.lookup(p) for p in prompts] if self.prefixes else []
        if not any(n for _, n in found):
            ids, mask = left_pad(prompts, self.pad_id, self.device)
            return None, mask, ids
        cache, cached_mask = self.prefixes.batch([key if n else None for key, n in found], [n for _, n in found])
        ids, new_mask = left_pad([p[n:] for p, (_, n) in zip(prompts, found, strict=True)], self.pad_id, self.device)
        return cache, torch.cat([cached_mask.to(new_mask.device), new_mask], dim=1), ids

    def _pick(self, logits: Any, gens: list[Any], rows: list[_Row], params: SamplingParams) -> Any:
        """Choose each running row's next token; finished rows get the pad token."""
        import torch

        logp = torch.log_softmax(logits, dim=-1)
        chosen = torch.full((len(rows),), self.pad_id, dtype=torch.long)
        for i, row in enumerate(rows):
            if row.finish:
                continue
            token = int(_sample(logits[i], gens[i], params))
            chosen[i] = token
            row.add(token, float(logp[i, token]), self.eos_ids, self.tokenizer, params)
        return chosen

    def score(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]) -> list[float]:
        """Sum of log p(continuation | prompt) per pair, teacher-forced.

        Pairs that share a prompt (every talent label of one task) share its KV cache: the
        prompt is encoded once, alone, and its distinct continuations run together on top
        of it, right-padded and sorted (`_score_after`). Routing then costs one prefill and
        one short batched pass per task instead of one pass per (task, talent); and since a
        pass holds exactly one prompt's distinct continuations in a fixed order, no score
        depends on the batch size or on the order the pairs came in."""
        by_prompt: dict[tuple[int, ...], list[int]] = {}
        for i, prompt in enumerate(prompts):
            by_prompt.setdefault(tuple(prompt), []).append(i)
        out = [0.0] * len(prompts)
        for prompt, rows in by_prompt.items():
            for i, value in zip(rows, self._score_after(prompt, [continuations[i] for i in rows]), strict=True):
                out[i] = value
        return out

    def _score_after(self, prompt: Sequence[int], conts: Sequence[Sequence[int]]) -> list[float]:
        """Right padding needs no attention mask here: causal attention keeps every real
        position blind to the padding after it, and padded positions are never summed."""
        import torch

        device, prefix_len = self.device, len(prompt) - 1
        distinct = sorted({tuple(c) for c in conts})
        width = 1 + max(len(c) for c in distinct)
        ids = torch.tensor([[prompt[-1], *c, *[self.pad_id] * (width - 1 - len(c))] for c in distinct], device=device)
        positions = torch.arange(prefix_len, prefix_len + width, device=device).expand(len(distinct), -1)
        with torch.inference_mode():
            cache = None
            if prefix_len:
                cache = self.model(input_ids=torch.tensor([list(prompt[:-1])], device=device), use_cache=True,
                                   logits_to_keep=1).cache
                cache.batch_repeat_interleave(len(distinct))
            logits = self.model(input_ids=ids, position_ids=positions, cache=cache, use_cache=cache is not None).logits
        picked = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        real = torch.arange(width - 1, device=device)[None] < torch.tensor([len(c) for c in distinct], device=device)[:, None]
        totals = dict(zip(distinct, torch.where(real, picked, 0.0).sum(dim=1).tolist(), strict=True))
        return [float(totals[tuple(c)]) for c in conts]


@dataclass
class _Row:
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish: str = ""
    text: str = ""

    def add(self, token: int, logprob: float, eos_ids: Sequence[int], tokenizer: Any, params: SamplingParams) -> None:
        self.ids.append(token)
        self.logprobs.append(logprob)
        if token in eos_ids:
            self.finish = "eos"
        elif params.stop:
            text = tokenizer.decode(self.ids, skip_special_tokens=True)
            if any(s in text for s in params.stop):
                self.finish = "stop"
        if not self.finish and len(self.ids) >= params.max_new_tokens:
            self.finish = "length"

    def completion(self, tokenizer: Any) -> Completion:
        return Completion(list(self.ids), tokenizer.decode(self.ids, skip_special_tokens=True),
                          self.finish or "length", list(self.logprobs))


def _sample(logits: Any, generator: Any, params: SamplingParams) -> Any:
    """Greedy argmax, or temperature + nucleus sampling from this row's own generator."""
    import torch

    if params.greedy:
        return torch.argmax(logits)
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = sorted_p.cumsum(-1) - sorted_p < params.top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return torch.multinomial(probs, 1, generator=generator)[0]


def left_pad(rows: Sequence[Sequence[int]], pad_id: int, device: Any = None) -> tuple[Any, Any]:
    """(input_ids, attention_mask), left-padded so every row's last token is aligned."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row):] = torch.tensor(list(row), dtype=torch.long)
            mask[i, width - len(row):] = 1
    return ids.to(device), mask.to(device)


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    found = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = found if isinstance(found, list) else [found]
    ids = [i for i in ids if i is not None]
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


@BACKENDS.register("vllm")
class VLLMBackend:
    """vLLM on a GPU, behind the same interface. Per-row seeds map to vLLM's per-request
    `seed`; scoring uses prompt logprobs. Only constructed when vLLM is importable.

    vLLM starts from a folder; a model object's folder (`name_or_path`) is its base model's,
    even after `merge_and_unload`, so the engine starts there and then receives the model's
    own weights (`sync_weights`, as TRL's `VLLMGeneration` does). RL calls `sync_weights`
    again after every optimizer step."""

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 16):
        try:
            from vllm import LLM
        except ImportError as err:  # pragma: no cover - vLLM is an optional extra
            from talentrl_cli.errors import ConfigError

            raise ConfigError("generation backend vllm needs the vllm package and a GPU",
                              "pip install vllm, or use eval.backend=hf") from err
        path = model if isinstance(model, str) else model.name_or_path  # pragma: no cover
        self.tokenizer, self.llm = tokenizer, LLM(model=path, seed=0)  # pragma: no cover
        if not isinstance(model, str):  # pragma: no cover
            self.sync_weights(model)

    def sync_weights(self, model: Any) -> None:  # pragma: no cover - needs a GPU
        """Load `model`'s current weights (a PEFT model's adapter merged) into the engine."""
        engine_model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        engine_model.load_weights(list(vllm_weights(model)))
        self.llm.reset_prefix_cache()

    def generate(self, prompts: Sequence[Sequence[int]], seeds: Sequence[int],
                 params: SamplingParams) -> list[Completion]:  # pragma: no cover - needs a GPU
        from vllm import SamplingParams as VParams

        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        sampling = [VParams(max_tokens=params.max_new_tokens, temperature=params.temperature,
                            top_p=params.top_p, stop=list(params.stop), seed=int(s), logprobs=0)
                    for s in seeds]
        outs = self.llm.generate(requests, sampling, use_tqdm=False)
        return [Completion(list(o.outputs[0].token_ids), o.outputs[0].text,
                           {"stop": "stop", "length": "length"}.get(o.outputs[0].finish_reason, "eos"))
                for o in outs]

    def score(self, prompts: Sequence[Sequence[int]],
              continuations: Sequence[Sequence[int]]) -> list[float]:  # pragma: no cover - needs a GPU
        from vllm import SamplingParams as VParams

        requests = [{"prompt_token_ids": list(p) + list(c)} for p, c in zip(prompts, continuations, strict=True)]
        outs = self.llm.generate(requests, VParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
        scores = []
        for out, cont in zip(outs, continuations, strict=True):
            tail = out.prompt_logprobs[-len(cont):]
            scores.append(sum(d[token].logprob for d, token in zip(tail, cont, strict=True)))
        return scores


def vllm_weights(model: Any) -> Any:
    """(name, tensor) under the names vLLM expects: a PEFT model's adapters merged for the
    read and unmerged after (TRL's `VLLMGeneration._iter_named_params`, single process)."""
    if not hasattr(model, "merge_adapter"):
        yield from ((name, p.data) for name, p in model.named_parameters())
        return
    model.merge_adapter()
    try:
        for name, p in model.named_parameters():
            name = name.removeprefix("base_model.model.").replace(".base_layer", "")
            if model.prefix in name or "original_module" in name:
                continue
            yield name.replace("modules_to_save.default.", ""), p.data
    finally:
        model.unmerge_adapter()
