"""``kernelcup.client.env``: ``KernelEnv``, a thin environment for learning loops over the kernelcup client (also
exported as ``kernelcup.client.KernelEnv``).

    from kernelcup.client import Client, KernelEnv

    with Client(server, token) as kc:
        env = KernelEnv(kc, "vectoradd", device="H100")
        observation = env.reset()            # the problem: description, cases, the starter (template)
        record = env.step(generated_code)    # submitted, run and timed by the trusted runner
        print(record.verdict, record.correct_fraction, record.speedup, record.reward)

``reset()`` reads the problem and its template; ``step(code)`` submits the code (benchmark mode by default: tests,
then timing beside the problem's reference), waits for the result and answers a ``Reward`` record. Nothing is
measured on this side. docs/agents.md shows it under gymnasium's ``Env`` interface (no gymnasium dependency here).

This module takes the client as an argument and imports of ``kernelcup.client`` only ``wire`` (the API's models and the
reward record, in the full and the light distribution alike), never its ``__init__``'s names (that module imports
this one to export ``KernelEnv``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kernelcup.client.wire import (
    LeaderboardDetailOut,
    Reward,
    SubmissionOut,
    TemplateOut,
    default_reward,
    refused,
    reward_of,
)

__all__ = ["KernelEnv", "Observation", "Reward"]

RewardFn = Callable[[bool, float, "float | None"], float]
"""(accepted, correct fraction, speedup or None) -> the scalar reward."""


class _Submitted(Protocol):
    def wait(self, timeout: float | None = None) -> SubmissionOut: ...


class _Client(Protocol):
    """What the environment uses of ``kernelcup.client.Client``."""

    def leaderboard(self, name: str) -> LeaderboardDetailOut: ...

    def template(self, name: str, language: str) -> TemplateOut: ...

    def submit(
        self,
        file: Any,
        leaderboard: str | None = None,
        devices: Sequence[str] | str | None = None,
        mode: Any = None,
        *,
        force: bool = False,
    ) -> _Submitted: ...

    def reward(self, submission_id: int) -> Any: ...


@dataclass(frozen=True)
class Observation:
    """What ``reset()`` shows the policy: the problem as competitors read it, and the starter to edit."""

    leaderboard: str
    description: str
    device: str
    language: str
    file_name: str
    template: str
    tests: tuple[dict[str, Any], ...]
    benchmarks: tuple[dict[str, Any], ...]


def _refusal(exc: Exception) -> str | None:
    """The message of an API refusal of the file itself (a 4xx other than 429 and 401/403), else None: those are the
    policy's doing and score 0; a rate limit, a bad token or an unreachable server is the loop's and is raised."""
    status = getattr(exc, "status", None)
    if isinstance(status, int) and 400 <= status < 500 and status not in (401, 403, 429):
        return str(getattr(exc, "message", exc))
    return None


class KernelEnv:
    """One problem (leaderboard) on one device. ``mode``: ``benchmark`` (default; timed, with the speedup over the
    reference), ``test`` (correctness only) or ``ranked`` (also enters the leaderboard)."""

    def __init__(
        self,
        client: _Client,
        leaderboard: str,
        *,
        device: str | None = None,
        language: str | None = None,
        mode: str = "benchmark",
        timeout_s: float | None = 1800.0,
        reward_fn: RewardFn = default_reward,
    ) -> None:
        self.client = client
        self.leaderboard = leaderboard
        self.device = device
        self.language = language
        self.mode = mode
        self.timeout_s = timeout_s
        self.reward_fn = reward_fn
        self.observation: Observation | None = None
        self.steps = 0

    def reset(self) -> Observation:
        """Read the problem and its template (the language asked for, else ``pytorch`` if offered, else the first)."""
        board = self.client.leaderboard(self.leaderboard)
        if self.device is not None and self.device not in board.devices:
            raise ValueError(f"{self.leaderboard} runs on {', '.join(board.devices)}, not {self.device}")
        device = self.device or board.devices[0]
        languages = list(board.languages)
        if not languages:
            raise ValueError(f"{self.leaderboard} has no template to start from")
        if self.language is not None and self.language not in languages:
            raise ValueError(f"{self.leaderboard} has templates for {', '.join(languages)}, not {self.language}")
        language = self.language or ("pytorch" if "pytorch" in languages else languages[0])
        template = self.client.template(self.leaderboard, language)
        self.observation = Observation(
            leaderboard=board.name,
            description=board.description,
            device=device,
            language=language,
            file_name=template.file_name,
            template=template.content,
            tests=board.tests,
            benchmarks=board.benchmarks,
        )
        self.steps = 0
        return self.observation

    def step(self, code: str | bytes) -> Reward:
        """Submit ``code``, wait for its result, and answer its reward record. ``TimeoutError`` after ``timeout_s``."""
        if self.observation is None:
            raise RuntimeError("call reset() before step()")
        self.steps += 1
        content = code.encode() if isinstance(code, str) else code
        obs = self.observation
        try:
            submitted = self.client.submit((obs.file_name, content), obs.leaderboard, [obs.device], self.mode)
        except Exception as exc:
            message = _refusal(exc)
            if message is None:
                raise
            return refused(message)
        result = submitted.wait(self.timeout_s)
        record = reward_of(result, self.reward_fn)
        versioned = self.client.reward(result.status.submission_id).rewards[0].reward
        return replace(record, versioned=versioned.model_dump(mode="json") if versioned is not None else None)
