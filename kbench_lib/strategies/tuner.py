"""The offline proposer: an autotuner over the tunable constants of a seed solution.

It needs no model and no key. From a seed kernel (a hand-written solution in
``problems/solutions/``, or ``tune:PATH`` for another folder in that layout) it finds the integer
literals that set a launch or tiling parameter (:func:`find_knobs`):

- Python (Triton launches): literals assigned to, or passed as, a name that says what it tunes
  (``BLOCK*``, ``TILE*``, ``num_warps``, ``num_stages``, ``*threads*``), in the expression that
  computes it (``BLOCK = max(32, full) if single else 4096``, ``BLOCK_M, BLOCK_N = 16, 256``,
  ``num_warps=8 if BLOCK >= 2048 else 4``); a literal a value is compared with is a threshold;
- CUDA (inside the source strings): ``int threads = ...;`` and other such declarations,
  ``#define BLOCK 256``, and the block size of a ``<<<grid, 256>>>`` launch;
- Triton options a solution left at their defaults (:func:`_option_knobs`): the L2 eviction
  policy of each ``tl.load`` (none, ``evict_first``, ``evict_last``: whether a tile read twice stays
  in L2, or a stream read once keeps out of its way) and the software-pipelining depth
  ``num_stages`` of a launch that sets ``num_warps`` but not it. Such a knob's values are indices
  into the texts it may insert (0: nothing, the solution as written).

Each knob gets a domain of legal values for its kind (powers of two for Triton block sizes and
warps, multiples of 32 up to 1024 for CUDA threads per block, ...). A proposal is the seed with some
of its knobs set to other values of their domains: ``sample`` gives the seed itself (index 0) and
random configurations, ``mutate`` moves one or two knobs of a parent a step or two, ``crossover``
takes each knob from one of two parents, ``refine`` mutates a correct parent and goes back to the
seed after a failure. Every proposal is a configuration the search has not tried, and, for the
repository's own solutions, one that runs differently at the timed size from every configuration
tried (:mod:`.launches`: a constant of a branch not taken, or a threshold no size crosses, changes
nothing there, and such a proposal would judge the same kernel again). Choices are drawn from a
generator seeded by the problem, the request and ``seed``: a search replays exactly.
"""
from __future__ import annotations

import hashlib
import io
import random
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ..core.candidates import Candidate
from ..generation.models import SOLUTIONS, Sample, folder_model
from ..suite.problems import Problem

KEYWORD = re.compile(r"block|tile|warps|stages|threads|group_size", re.IGNORECASE)
THREADS = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
WARPS = (1, 2, 4, 8, 16, 32)
STAGES = (1, 2, 3, 4, 5)
COMPARISON = {"<", "<=", ">", ">=", "==", "!="}
ARITHMETIC = {"*", "/", "//", "%", "+", "-", "<<", ">>", "**"}  # a literal in arithmetic is a formula's, not a knob


@dataclass(frozen=True)
class Knob:
    name: str  # what it sets and where: "num_warps@57.0" (line 57, first literal of that name)
    start: int  # character offsets of the literal in the source
    end: int
    value: int
    domain: tuple[int, ...]
    texts: tuple[str, ...] | None = None  # what each value of the domain writes (None: the number itself)

    def render(self, value: int) -> str:
        return self.texts[self.domain.index(value)] if self.texts else str(value)


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _domain(kind: str, value: int, cuda: bool) -> tuple[int, ...] | None:
    """The values a literal of this kind may take, or None when it is not tunable."""
    if kind == "threshold":
        return tuple(1 << i for i in range(1, 21) if value // 8 <= 1 << i <= value * 8) if _pow2(value) and value >= 8 else None
    if re.search(r"warps", kind, re.IGNORECASE) and not cuda:
        return WARPS if value in WARPS else None
    if re.search(r"stages", kind, re.IGNORECASE):
        return STAGES if value in STAGES else None
    if cuda or re.search(r"threads", kind, re.IGNORECASE):
        return THREADS if value in THREADS else None
    if _pow2(value) and 2 <= value <= 65536:  # Triton block and tile sizes: tl.arange needs powers of two
        return tuple(1 << i for i in range(1, 17) if max(2, value // 8) <= 1 << i <= value * 8)
    return None


def _offsets(source: str) -> list[int]:
    starts, total = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    return starts + [total]


def _python_knobs(source: str) -> list[tuple[str, int, int, int, bool]]:
    """(kind, start, end, value, is_cuda) of the tunable literals of the Python code."""
    lines = _offsets(source)
    found, logical = [], []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    for tok in tokens:
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            found += _line_literals(logical, lines)
            logical = []
        elif tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            logical.append(tok)
    for tok in tokens:
        if tok.type == tokenize.STRING and ("__global__" in tok.string or "<<<" in tok.string):
            found += _cuda_literals(tok.string, lines[tok.start[0] - 1] + tok.start[1])
    return found


def _line_literals(toks: list, lines: list[int]) -> list:
    out = []
    targets = _tuple_targets(toks)
    label, number_i = None, 0
    for i, tok in enumerate(toks):
        if tok.type == tokenize.NAME and i + 1 < len(toks) and toks[i + 1].string == "=":
            label = tok.string
        if tok.type != tokenize.NUMBER or not re.fullmatch(r"[1-9][0-9]*", tok.string):
            continue
        if (i > 0 and toks[i - 1].string in ARITHMETIC) or (i + 1 < len(toks) and toks[i + 1].string in ARITHMETIC):
            number_i += bool(targets)
            continue
        kind = label
        if targets:
            kind = targets[number_i] if number_i < len(targets) else None
            number_i += 1
        if i > 0 and toks[i - 1].string in COMPARISON:
            kind = "threshold" if kind and KEYWORD.search(kind) else None
        if kind == "threshold" or (kind and KEYWORD.search(kind)):
            start = lines[tok.start[0] - 1] + tok.start[1]
            out.append((kind, start, start + len(tok.string), int(tok.string), False))
    return out


def _tuple_targets(toks: list) -> list[str] | None:
    """``A, B = 1, 2``: the target names in order, when every value is a plain literal."""
    eq = [i for i, t in enumerate(toks) if t.string == "="]
    if len(eq) != 1:
        return None
    left, right = toks[:eq[0]], toks[eq[0] + 1:]
    names = [t.string for t in left if t.type == tokenize.NAME]
    if len(names) < 2 or any(t.type not in (tokenize.NAME,) and t.string != "," for t in left):
        return None
    if any(t.type != tokenize.NUMBER and t.string != "," for t in right):
        return None
    return names


_CUDA_DECL = re.compile(r"(?:(?:const|constexpr|static)\s+)*(?:int|unsigned|int64_t|auto|size_t)\s+(\w+)\s*=\s*([^;{}]+);")
_CUDA_DEFINE = re.compile(r"#define\s+(\w+)\s+(\d+)\b")
_CUDA_LAUNCH = re.compile(r"<<<\s*[^,<>]+,\s*(\d+)\s*[,>]")
_NUMBER = re.compile(r"(?<![\w.])([1-9][0-9]*)(?![\w.])")
_CMP_BEFORE = re.compile(r"(<=|>=|<|>|==|!=)\s*$")
_ARITH_BEFORE = re.compile(r"[-+*/%]\s*$|<<\s*$|>>\s*$")
_ARITH_AFTER = re.compile(r"\s*([-+*/%]|<<|>>)")


def _cuda_literals(text: str, base: int) -> list:
    out = []
    for m in _CUDA_DECL.finditer(text):
        name, expr, at = m.group(1), m.group(2), m.start(2)
        if not KEYWORD.search(name):
            continue
        for n in _NUMBER.finditer(expr):
            if _ARITH_BEFORE.search(expr[: n.start()]) or _ARITH_AFTER.match(expr[n.end():]):
                continue
            kind = "threshold" if _CMP_BEFORE.search(expr[: n.start()]) else name
            out.append((kind, base + at + n.start(), base + at + n.end(), int(n.group(1)), True))
    for m in _CUDA_DEFINE.finditer(text):
        if KEYWORD.search(m.group(1)):
            out.append((m.group(1), base + m.start(2), base + m.end(2), int(m.group(2)), True))
    for m in _CUDA_LAUNCH.finditer(text):
        out.append(("threads", base + m.start(1), base + m.end(1), int(m.group(1)), True))
    return out


EVICTION = ("", "evict_first", "evict_last")
STAGES_ADDED = (0, 1, 2, 4, 5)  # 0: left to Triton (3 on this generation of GPUs, so 3 itself is not proposed)


def _call_end(tokens: list, open_i: int) -> int:
    """The index of the ``)`` closing the ``(`` at ``open_i``."""
    depth = 0
    for j in range(open_i, len(tokens)):
        if tokens[j].string in "([{":
            depth += 1
        elif tokens[j].string in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _keywords(tokens: list, open_i: int, close_i: int) -> dict[str, int]:
    """The keyword arguments of a call: {name: index of its name token}."""
    out, depth = {}, 0
    for j in range(open_i, close_i):
        t = tokens[j].string
        depth += t in "([{"
        depth -= t in ")]}"
        if depth == 1 and tokens[j].type == tokenize.NAME and tokens[j + 1].string == "=" and tokens[j - 1].string in "(,":
            out[t] = j
    return out


def _option_knobs(source: str) -> list[tuple[str, int, int, int, tuple, tuple]]:
    """(kind, start, end, value, domain, texts) of the Triton options a solution may leave at their
    defaults: ``eviction_policy`` of ``tl.load`` calls and ``num_stages`` of launches with ``num_warps``."""
    lines = _offsets(source)
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []

    def at(tok, end=False):
        row, col = tok.end if end else tok.start
        return lines[row - 1] + col

    out = []
    for i, tok in enumerate(tokens[:-3]):
        is_load = tok.string == "tl" and tokens[i + 1].string == "." and tokens[i + 2].string == "load" and tokens[i + 3].string == "("
        is_launch = tok.string == "]" and tokens[i + 1].string == "("
        if not (is_load or is_launch):
            continue
        open_i = i + 3 if is_load else i + 1
        close_i = _call_end(tokens, open_i)
        if close_i < 0:
            continue
        kw = _keywords(tokens, open_i, close_i)
        sep = "" if tokens[close_i - 1].string in ",(" else ", "
        if is_load:
            texts = tuple("" if e == "" else f'{sep}eviction_policy="{e}"' for e in EVICTION)
            if "eviction_policy" not in kw:
                out.append(("eviction", at(tokens[close_i]), at(tokens[close_i]), 0, (0, 1, 2), texts))
                continue
            j = kw["eviction_policy"]
            value = tokens[j + 2].string.strip("\"'") if tokens[j + 2].type == tokenize.STRING else None
            if value in EVICTION and tokens[j + 3].string in ",)" and tokens[j - 1].string == ",":  # a keyword of its own: it may go
                start, end = at(tokens[j - 1]), at(tokens[j + 2], end=True)
                texts = tuple(source[start:end] if e == value else "" if e == "" else f', eviction_policy="{e}"' for e in EVICTION)
                out.append(("eviction", start, end, EVICTION.index(value), (0, 1, 2), texts))
        elif "num_warps" in kw and "num_stages" not in kw:
            texts = tuple("" if v == 0 else f"{sep}num_stages={v}" for v in STAGES_ADDED)
            out.append(("num_stages", at(tokens[close_i]), at(tokens[close_i]), 0, STAGES_ADDED, texts))
    return out


def find_knobs(source: str) -> list[Knob]:
    """The tunable literals of ``source`` in source order (see the module docstring)."""
    knobs, seen_spans, counts = [], set(), {}
    lines = _offsets(source)
    found = [(kind, start, end, value, _domain(kind, value, cuda), None) for kind, start, end, value, cuda in _python_knobs(source)]
    for kind, start, end, value, domain, texts in sorted(found + _option_knobs(source), key=lambda k: (k[1], k[2])):
        if domain is None or len(domain) < 2 or (start, end) in seen_spans:
            continue
        seen_spans.add((start, end))
        line = next((i for i in range(len(lines) - 1) if lines[i] <= start < lines[i + 1]), len(lines) - 2) + 1
        label = f"{kind}@{line}"
        counts[label] = counts.get(label, -1) + 1
        knobs.append(Knob(f"{label}.{counts[label]}", start, end, value, domain, texts))
    return knobs


def apply_config(source: str, knobs: list[Knob], config: dict[str, int]) -> str:
    """``source`` with each knob's literal replaced by its value in ``config`` (default: unchanged)."""
    out = source
    for k in sorted(knobs, key=lambda k: k.start, reverse=True):
        value = config.get(k.name, k.value)
        if value not in k.domain:
            raise ValueError(f"{value} is not a legal value of {k.name} (domain {k.domain})")
        out = out[: k.start] + k.render(value) + out[k.end:]
    return out


class TunerProposer:
    """``dedupe`` (default: for the repository's own solutions only, since it runs their Python in
    this process) skips configurations whose launches at the timed size match one already proposed."""

    def __init__(self, seeds: str | Path = SOLUTIONS, backends: tuple[str, ...] | None = None, seed: int = 0, dedupe: bool | None = None):
        self.seeds, self.seed = Path(seeds), seed
        self.dedupe = Path(seeds).resolve() == Path(SOLUTIONS).resolve() if dedupe is None else dedupe
        self._generate = folder_model(self.seeds, backends)
        self._base: dict[str, tuple[Candidate, list[Knob]] | None] = {}
        self._seen: dict[str, set] = {}
        self._runs: dict[str, set] = {}  # per problem: the launch records of the configurations proposed
        self.same_kernel_skipped = 0

    @classmethod
    def from_spec(cls, spec: str, backends=None, seed: int = 0) -> "TunerProposer":
        return cls(spec.split(":", 1)[1] if ":" in spec else SOLUTIONS, backends, seed)

    def base(self, problem: Problem) -> tuple[Candidate, list[Knob]] | None:
        """The seed candidate of ``problem`` and its knobs (None without a seed)."""
        if problem.key not in self._base:
            cands = [s.candidate for s in self._generate(problem) if s.candidate is not None]
            self._base[problem.key] = (cands[0], find_knobs(cands[0].source)) if cands else None
        return self._base[problem.key]

    def covers(self, problem: Problem) -> bool:
        return self.base(problem) is not None

    def _rng(self, problem: Problem, request) -> random.Random:
        text = f"{problem.key}|{request.operation}|{request.turn}|{request.index}|{[p.id for p in request.parents]}|{self.seed}"
        return random.Random(int(hashlib.sha256(text.encode()).hexdigest()[:16], 16))

    @staticmethod
    def _mutate(rng: random.Random, knobs: list[Knob], config: dict, n: int) -> dict:
        new = dict(config)
        for k in rng.sample(knobs, min(n, len(knobs))):
            i = k.domain.index(new[k.name]) + rng.choice((-2, -1, 1, 2))
            new[k.name] = k.domain[max(0, min(len(k.domain) - 1, i))]
        return new

    def _config(self, rng, knobs, request, seed_config) -> dict | None:
        parents = [p.knobs or seed_config for p in request.parents]
        op = request.operation
        if op == "sample" and request.index == 0:
            return seed_config
        if op == "sample" or not parents:
            return self._mutate(rng, knobs, seed_config, rng.randint(1, 3))
        if op == "crossover" and len(parents) >= 2:
            return {k.name: rng.choice(parents[:2])[k.name] for k in knobs}
        start = parents[0] if request.parents[0].trusted else seed_config
        return self._mutate(rng, knobs, start, rng.randint(1, 2))

    def propose(self, problem: Problem, requests: list) -> list[Sample | None]:
        found = self.base(problem)
        if found is None:
            return [Sample(r.index, None, f"tune: no seed solution for {problem.key} under {self.seeds}", failure="no_code") for r in requests]
        base, knobs = found
        seed_config = {k.name: k.value for k in knobs}
        seen = self._seen.setdefault(problem.key, set())
        runs = self._runs.setdefault(problem.key, set())
        out = []
        for r in requests:
            rng = self._rng(problem, r)
            config = self._config(rng, knobs, r, seed_config)
            for _ in range(64):  # a configuration not tried yet, that runs differently from those tried
                key = tuple(sorted(config.items())) if config is not None else None
                if key is not None and key not in seen:
                    record = self._record(problem, base, knobs, config)
                    if record is None or record not in runs:
                        break
                    seen.add(key)  # the same kernels as a configuration proposed before: tried, in effect
                    self.same_kernel_skipped += 1
                config = self._mutate(rng, knobs, config or seed_config, rng.randint(1, 3)) if knobs else None
            else:
                config = None
            if config is None or tuple(sorted(config.items())) in seen:
                out.append(None)
                continue
            seen.add(tuple(sorted(config.items())))
            if record is not None:
                runs.add(record)
            out.append(Sample(r.index, self.candidate(problem, config), meta={"knobs": config}))
        return out

    def _record(self, problem: Problem, base: Candidate, knobs: list[Knob], config: dict) -> str | None:
        """The key of the configuration's launch record at the timed size (None: not compared)."""
        if not self.dedupe or base.backend != "triton":
            return None
        from .launches import launch_record

        record = launch_record(problem, apply_config(base.source, knobs, config))
        return None if record is None else record.key

    def candidate(self, problem: Problem, config: dict) -> Candidate:
        """The seed of ``problem`` with the constants of ``config``, under a comment naming the changes."""
        base, knobs = self.base(problem)
        source = apply_config(base.source, knobs, config)
        changed = {k.name: config[k.name] for k in knobs if config.get(k.name, k.value) != k.value}
        tag = hashlib.sha256(source.encode()).hexdigest()[:8]
        header = f"# kbench tune: {base.name} with {changed or 'its own constants'}\n"
        return Candidate(source=header + source, backend=base.backend, name=f"{problem.path.stem}__tune_{tag}")

    def close(self) -> None:
        if self.same_kernel_skipped:
            print(f"tune: {self.same_kernel_skipped} configurations skipped (the same launches as one proposed before)", flush=True)
