"""A local Hugging Face checkpoint (``hf:PATH``), sampled with ``transformers``.

The checkpoint directory is loaded once, on first use, in its saved dtype, on the GPU when there
is one (``GenerationOptions.device`` overrides). The messages go through the tokenizer's chat
template when it has one, else they are joined as ``role: content`` paragraphs. All the samples a
problem lacks are drawn in one batched ``generate`` call (``num_return_sequences``), seeded from
the first sample's seed (0 when none is set) so that a batch is reproducible; at temperature 0 the
one greedy answer is every sample's. Nothing is downloaded: PATH must hold the model and tokenizer.
"""
from __future__ import annotations

import asyncio
import threading

from ..core.seeding import SEEDED
from .cache import Response
from .errors import MissingExtra, RequestRejected


class HFProvider:
    name = "hf"
    default_concurrency = 1  # one batch at a time on the device
    batched = True

    def __init__(self, path: str, device: str | None = None):
        try:
            import transformers
        except ImportError as e:
            raise MissingExtra("hf", "transformers", "hf") from e
        import torch

        self._transformers = transformers
        self._torch = torch
        self.path = path
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._model = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                t = self._transformers
                tok = t.AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                if tok.pad_token is None:
                    tok.pad_token = tok.eos_token
                tok.padding_side = "left"
                model = t.AutoModelForCausalLM.from_pretrained(self.path, dtype="auto", local_files_only=True)
                self._model, self._tokenizer = model.to(self.device).eval(), tok
        return self._model, self._tokenizer

    def prompt_text(self, messages: list[dict]) -> str:
        _, tok = self._load()
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\n\nassistant:"

    async def complete_batch(self, messages: list[dict], params: list[dict]) -> list[Response]:
        return await asyncio.to_thread(self._generate, messages, params)

    def _generate(self, messages: list[dict], params: list[dict]) -> list[Response]:
        model, tok = self._load()
        torch = self._torch
        p = params[0]
        enc = tok([self.prompt_text(messages)], return_tensors="pt").to(self.device)
        n_prompt = int(enc["input_ids"].shape[1])
        max_new = int(p.get("max_tokens", 1024))
        limit = getattr(model.config, "max_position_embeddings", None)
        if limit is not None and n_prompt + max_new > limit:
            raise RequestRejected(f"{self.path}: a prompt of {n_prompt} tokens plus max_tokens {max_new} exceeds the model's {limit} positions")
        temperature = p.get("temperature") or 0.0
        sampling = {"do_sample": True, "temperature": temperature, "num_return_sequences": len(params)} if temperature > 0 else {"do_sample": False}
        if temperature > 0 and p.get("top_p") is not None:
            sampling["top_p"] = p["top_p"]
        with SEEDED, torch.inference_mode():  # sampling draws from the global generators the judges' seeded draws use
            torch.manual_seed(p.get("seed", 0))
            out = model.generate(**enc, max_new_tokens=max_new, pad_token_id=tok.pad_token_id, **sampling)
        rows = out[:, n_prompt:].cpu()
        if temperature <= 0:
            rows = rows.expand(len(params), -1)
        return [self._response(row, n_prompt, max_new, tok) for row in rows]

    @staticmethod
    def _response(row, n_prompt: int, max_new: int, tok) -> Response:
        ids = row.tolist()
        if tok.eos_token_id is not None and tok.eos_token_id in ids:
            ids = ids[: ids.index(tok.eos_token_id) + 1]  # the rest is padding after an early end
        elif tok.pad_token_id is not None and tok.pad_token_id in ids:
            ids = ids[: ids.index(tok.pad_token_id)]
        return Response(text=tok.decode(ids, skip_special_tokens=True), prompt_tokens=n_prompt, completion_tokens=len(ids),
                        finish_reason="length" if len(ids) >= max_new else "stop")

    async def aclose(self) -> None:
        """Drops the checkpoint (and, on a GPU, the memory the caching allocator kept for it)."""
        with self._lock:
            self._model, self._tokenizer = None, None
        if self.device.startswith("cuda") and self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()
