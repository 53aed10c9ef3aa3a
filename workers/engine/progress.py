"""Progress from inside an operation: how far a long step has come, for the job record, the
browser page and the CLI.

``run_pipeline`` reports between steps; an operation that works in iterations or rounds reports
its own fraction done with :func:`report`, without a parameter for it in every signature: the
pipeline sets the current :class:`Reporter` (a context variable) around each step, mapping the
operation's 0..1 onto the step's slice ``[i / n, (i + 1) / n]`` of the pipeline. The stage it
passes on is the op name, with the operation's detail after a colon
(``"isotropic_remesh: iteration 2/5, collapse, round 3"``). With nobody listening :func:`report`
is one context-variable read and returns.

A step's reports go on at most every :data:`INTERVAL` seconds of wall time (the worker sends each
over a pipe, and the supervisor to Redis); fractions are clamped into [0, 1] and never go
backwards (an estimate, such as the rounds a flip loop still needs, may fall back: the user sees
the highest value so far). :func:`part` maps a stretch of an operation (an iteration, a
sub-step) onto a sub-range, so that a loop shared by several operations reports its own 0..1.

Operations pass only host values they already have (loop counters, array shapes, counts the code
pulls to the host anyway): a report never synchronizes the GPU. Where a loop only queues GPU work
(no host read per iteration), its reports count queued iterations, which run ahead of the device
by at most the launch queue.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

Progress = Callable[[float, str], None]

#: least seconds of wall time between two reports passed on within a step
INTERVAL = 0.15

#: the clock the interval is measured with (a module attribute so that tests can replace it)
clock: Callable[[], float] = time.monotonic


@dataclass(eq=False)
class _Channel:
    """What the reporters of one step share: where reports go, the step's name and the end of
    its slice, when the last report went and the highest pipeline fraction sent."""

    send: Progress
    name: str
    hi: float
    interval: float
    last: float
    sent: float


@dataclass(frozen=True, eq=False)
class Reporter:
    """Reports of one stretch of a step: the operation's 0..1 maps onto ``[lo, hi]`` of the
    pipeline; ``detail`` is put before the operation's own detail."""

    channel: _Channel
    lo: float
    hi: float
    detail: str = ""

    def due(self) -> bool:
        """Whether a report now would be passed on (the interval has run out)."""
        return clock() - self.channel.last >= self.channel.interval

    def __call__(self, fraction: float, detail: str = "") -> None:
        ch = self.channel
        now = clock()
        if now - ch.last < ch.interval:
            return
        f = min(fraction, 1.0) if fraction >= 0.0 else 0.0  # NaN counts as 0
        p = min(max(self.lo + (self.hi - self.lo) * f, ch.sent), ch.hi)
        ch.last, ch.sent = now, p
        text = ", ".join(d for d in (self.detail, detail) if d)
        ch.send(p, f"{ch.name}: {text}" if text else ch.name)

    def part(self, lo: float, hi: float, detail: str = "") -> Reporter:
        """The reporter of the stretch ``[lo, hi]`` (fractions of this one) with ``detail``."""
        lo, hi = _clamp(lo), _clamp(hi)
        span = self.hi - self.lo
        text = ", ".join(d for d in (self.detail, detail) if d)
        return Reporter(self.channel, self.lo + span * lo, self.lo + span * max(lo, hi), text)


_current: ContextVar[Reporter | None] = ContextVar("tessera_progress", default=None)


def _clamp(x: float) -> float:
    return min(x, 1.0) if x >= 0.0 else 0.0


def report(fraction: float, detail: str = "") -> None:
    """Report that the current operation (or :func:`part` of it) is ``fraction`` (0..1, a host
    float: never a device value, whose reading would synchronize) done, now doing ``detail``
    (a few words: ``"iteration 2/5"``). A no-op when nobody listens or the last report went
    less than :data:`INTERVAL` seconds ago."""
    r = _current.get()
    if r is not None:
        r(fraction, detail)


def due() -> bool:
    """Whether :func:`report` would pass a report on now: lets a caller skip working out an
    estimate that costs more than a loop counter."""
    r = _current.get()
    return r is not None and r.due()


@contextmanager
def part(lo: float, hi: float, detail: str = "") -> Iterator[None]:
    """Within the block, the current operation's reports of 0..1 mean ``lo..hi`` of the
    enclosing stretch, their detail prefixed with ``detail`` (``"iteration 2/5, split"``).
    Nothing happens when nobody listens."""
    r = _current.get()
    if r is None:
        yield
        return
    token = _current.set(r.part(lo, hi, detail))
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def step(send: Progress | None, lo: float, hi: float, name: str) -> Iterator[None]:
    """Around one pipeline step: reports within the block go to ``send`` as ``lo..hi`` with the
    stage ``name`` (and the detail). The interval counts from entering the block (the pipeline
    has just reported the step's start). ``send`` None: nobody listens, also for an enclosing
    step's reporter."""
    reporter = None
    if send is not None:
        lo, hi = _clamp(lo), _clamp(hi)
        hi = max(lo, hi)
        reporter = Reporter(_Channel(send, name, hi, INTERVAL, clock(), lo), lo, hi)
    token = _current.set(reporter)
    try:
        yield
    finally:
        _current.reset(token)


def decay(first: float, left: float, end: float = 1.0) -> float:
    """Estimated fraction done of a loop whose remaining work shrinks about geometrically from
    ``first`` and which stops once it is below ``end``: ``log(first / left) / log(first /
    end)``, 0 while nothing shrank, 1 at or below ``end`` (``end > 0``). Suits loops of rounds
    whose count is not known in advance (each round does a share of what is left)."""
    if left <= end:
        return 1.0
    if left >= first:
        return 0.0
    return math.log(first / left) / math.log(first / end)


def rounds_done(
    rounds: int, max_rounds: int, first: float = 0.0, last: float = 0.0, tail: float = 0.0
) -> float:
    """Estimated fraction done of a loop of at most ``max_rounds`` rounds after ``rounds`` of
    them, the first of which found ``first`` units of work and the latest ``last`` (splits,
    collapses, candidates left); the loop stops once a round finds less than ``max(tail *
    first, 1)``. The larger of the rounds used up and :func:`decay` of the work."""
    f = rounds / max_rounds if max_rounds > 0 else 0.0
    if rounds > 0 and first > 0:
        f = max(f, decay(first, last, max(tail * first, 1.0)))
    return min(f, 1.0)
