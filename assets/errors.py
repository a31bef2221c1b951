"""The one door ragpipe's errors cross into Dagster by.

Every step's compute function passes through `door` (tests/test_definitions.py checks each op of the code location).
An `InputError` (the user's settings, golden set, storage URI, export request) leaves as a `dg.Failure` that is never
retried and that carries `INPUT_ERROR` in its metadata; `ragpipe ci` reads that mark (`is_input_failure`) to exit 2.
The classification is by type at the raising point, so a new input error needs no list kept in step.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

import dagster as dg

from ragpipe.core import InputError

INPUT_ERROR = "ragpipe/input_error"  # metadata key of a step failure caused by the user's input
F = TypeVar("F", bound=Callable[..., Any])


def input_failure(exc: InputError) -> dg.Failure:
    """The error itself as the run's first message, and no retry: the same input fails the same way."""
    return dg.Failure(
        description=f"{type(exc).__name__}: {exc}", metadata={INPUT_ERROR: type(exc).__name__}, allow_retries=False
    )


def door(fn: F) -> F:
    """`fn` (a step's compute function, plain or a generator) with its InputErrors raised as `input_failure`."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(*args, **kwargs)
            except InputError as exc:
                raise input_failure(exc) from exc

        wrapped: Any = generator
    else:

        @functools.wraps(fn)
        def plain(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except InputError as exc:
                raise input_failure(exc) from exc

        wrapped = plain
    wrapped.ragpipe_door = True
    return wrapped


def passes_door(fn: Callable[..., Any]) -> bool:
    return getattr(fn, "ragpipe_door", False)


def is_input_failure(step_failure_data: Any) -> bool:
    """Whether a failed step's error came through the door as an InputError."""
    data = getattr(step_failure_data, "user_failure_data", None)
    return data is not None and INPUT_ERROR in (data.metadata or {})
