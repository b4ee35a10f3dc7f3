"""Prompts of the search strategies, built on the one-shot prompt of :mod:`kbench_lib.generation.prompts`.

- refine / translate: the one-shot conversation, the previous candidate as the model's own answer,
  then the judge's feedback (:mod:`.feedback`) and the request for a better version (KernelBench's
  multi-turn refinement; robust-kbench's translation phase fixes errors this way).
- mutate / crossover (evolution): the task, the architecture and its configurations, then one or
  two parent kernels, each with its verdict and profile, and the request for a faster kernel that
  changes one (mutation) or combines the best of both (crossover).
"""
from __future__ import annotations

from ..generation.prompts import PromptOptions, build_messages, precision_block, shapes_block, task_block
from ..suite.problems import Problem
from .feedback import FeedbackOptions, feedback_text

REFINE = """The judge ran your code. What it saw:

{feedback}

{goal}
Answer with the complete code of the new `ModelNew` in one fenced ```python block."""
GOAL_FIX = "Fix the problem: make the code build and give correct results on every configuration, then make it fast."
GOAL_FASTER = "It is correct. Make it faster while keeping it correct: use the profile to find where the time goes."

PARENT = """### Kernel {label}
```python
{source}
```
What the judge saw of it:
{feedback}"""
MUTATE = ("Above is one of the best correct kernels found so far. Write a new version that runs faster: change one "
          "thing that the profile says matters (tiling, fusion, memory access, launch configuration, algorithm) and keep "
          "everything else correct.")
CROSSOVER = ("Above are two of the best correct kernels found so far. Write a new version that runs faster than both by "
             "combining their best ideas.")
ANSWER = "Answer with the complete code of the new `ModelNew` in one fenced ```python block."


def fenced(source: str | None) -> str:
    return f"```python\n{(source or '# (no code was found in this answer)').rstrip()}\n```"


def refine_messages(problem: Problem, prompt: PromptOptions, previous_source: str | None, observation: dict,
                    feedback: FeedbackOptions) -> list[dict]:
    """The one-shot prompt, the previous answer, and the judge's feedback on it."""
    goal = GOAL_FASTER if observation.get("trusted") else GOAL_FIX
    return build_messages(problem, prompt) + [
        {"role": "assistant", "content": fenced(previous_source)},
        {"role": "user", "content": REFINE.format(feedback=feedback_text(observation, feedback), goal=goal)},
    ]


def evolve_messages(problem: Problem, prompt: PromptOptions, parents: list[tuple[str, dict]], feedback: FeedbackOptions) -> list[dict]:
    """A mutation (one parent) or crossover (two) prompt; ``parents`` are (source, observation)."""
    one_shot = build_messages(problem, prompt)
    blocks = [task_block(prompt), f"The architecture to replace, `Model`:\n```python\n{problem.source.strip()}\n```"]
    if prompt.shapes:
        blocks.append(shapes_block(problem, prompt.small))
    blocks.append(precision_block(prompt.precision))
    for i, (source, obs) in enumerate(parents):
        blocks.append(PARENT.format(label="ABCDEFGH"[i], source=(source or "").rstrip(), feedback=feedback_text(obs, feedback)))
    blocks += [MUTATE if len(parents) == 1 else CROSSOVER, ANSWER]
    return [one_shot[0], {"role": "user", "content": "\n\n".join(blocks) + "\n"}]
