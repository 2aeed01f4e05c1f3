"""Progress of kasoku's long calls: a tqdm bar on stderr, the caller's own callback, or nothing.

Every call that takes ``progress=`` (key generation, a bootstrapper's plan, ``matmul``, the benchmarks) goes through
:func:`reporter`.  The library calls the result with ``(done, total)`` after each step; between steps it checks for
Ctrl-C, so an interrupted call raises ``KeyboardInterrupt`` at the next step and returns nothing (no key set, plan or
product half made).
"""

from __future__ import annotations

import sys
from typing import Callable, Optional, Union

Progress = Optional[Union[bool, Callable[[int, int], object]]]


def reporter(progress: Progress, what: str, unit: str = "step") -> Optional[Callable[[int, int], None]]:
    """The ``(done, total)`` callback for a call's ``progress`` argument, or None for no reports.

    Parameters
    ----------
    progress : None, bool or callable
        ``None``: a bar when stderr is a terminal, shown once the call has lasted a second; ``True``: a bar from the
        first step (plain lines when stderr is not a terminal); ``False``: nothing; a callable: called with
        ``(done, total)`` after each step (an exception it raises ends the call).
    what : str
        What the steps are, for the bar's label (``"key generation"``).
    unit : str
        The name of one step (``"key"``).
    """
    if progress is False:
        return None
    if callable(progress):
        return progress
    if progress is not True and progress is not None:
        raise TypeError(f"progress must be None, True, False or a callable(done, total), not {progress!r}")
    if progress is None and not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(
                total=total,
                desc=f"kasoku: {what}",
                unit=unit,
                file=sys.stderr,
                delay=1.0 if progress is None else 0.0,
                mininterval=0.2,
            )
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


class Steps:
    """Named steps of a run whose number is not known ahead (the benchmarks): on a terminal a tqdm bar that counts
    them and names the current one, elsewhere one line per step on ``stream``.  ``write`` prints a result line on
    stdout without breaking the bar."""

    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.bar = None
        if hasattr(self.stream, "isatty") and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(desc=label, unit="step", file=self.stream, bar_format="{desc} [{n_fmt} steps, {elapsed}]")

    def step(self, name: str) -> None:
        """Step ``name`` begins."""
        if self.bar is None:
            print(f"[{self.label}] {name} ...", file=self.stream, flush=True)
            return
        self.bar.set_description_str(f"{self.label}: {name}")
        self.bar.update(1)

    def write(self, line: str) -> None:
        """A result line on stdout (above the bar on a terminal)."""
        if self.bar is None:
            print(line, flush=True)
        else:
            self.bar.write(line, file=sys.stdout)

    def close(self) -> None:
        """The run is over: the bar (if any) is closed."""
        if self.bar is not None:
            self.bar.close()
