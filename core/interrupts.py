"""SIGINT, SIGTERM and SIGHUP end a run the same way: as Ctrl-C does.

Python turns SIGINT into :class:`KeyboardInterrupt`; :func:`signals_as_interrupts` makes SIGTERM
(``kill``, ``timeout``, batch schedulers) and SIGHUP (a closed terminal) raise it too, so that
every ``except KeyboardInterrupt`` that keeps finished work also serves them. The signal that
ended the run is remembered for the exit status, ``128 + signal`` as shells report it: 130 for
SIGINT, 143 for SIGTERM, 129 for SIGHUP.

PySAT catches SIGINT itself during its solver calls and cardinality encodings, and raises its
own error instead of KeyboardInterrupt: :func:`interruptible` turns it back into one around
those calls, and :func:`raised_by_signal` recognises it where it escaped them, so that code
which turns exceptions into findings (an oracle's crash, a case that failed) lets a signal
through (:func:`reraise_signal`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: The signals that end a run with its finished work kept.
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                if hasattr(signal, name))

_received: list[int] = []

#: What PySAT raises when SIGINT comes during one of its calls (its own handler catches the
#: signal, so Python's never runs); the interrupted solver must not be called again.
PYSAT_INTERRUPT = "Caught keyboard interrupt"


#: Signals deferred out of a callback (:func:`_raise`), each with the timer that sends it again.
_deferred: list[tuple[threading.Timer, int]] = []


def _raise(signum: int, frame: FrameType | None) -> None:
    if _in_callback(frame):
        # Python swallows an exception raised in a finalizer or a weakref callback
        # ("Exception ignored in ..."), and the run would go on: have the signal come again
        # once it is over.
        timer = threading.Timer(0.01, os.kill, (os.getpid(), signum))
        timer.daemon = True
        _deferred.append((timer, signum))
        timer.start()
        return
    _received.append(signum)
    raise KeyboardInterrupt


def _take_back_deferred() -> int | None:
    """Cancel the signals deferred out of callbacks that have not come again yet; the last of
    them, or None. A timer already sending its signal is waited for (the signal then reaches
    the handlers still installed)."""
    late = None
    while _deferred:
        timer, signum = _deferred.pop()
        if not timer.finished.is_set():
            late = signum if late is None else late
        timer.cancel()
        timer.join()
    return late


def _in_callback(frame: FrameType | None) -> bool:
    """Whether the code the signal interrupted may be a callback whose exceptions Python
    ignores, or one that must not stop halfway: inside a ``__del__`` method, or the ``__init__``
    or ``delete`` of an object that has one (:func:`_finalizable_method`), in the
    import machinery itself (its module locks are released by weakref callbacks), or in code
    a module runs from a string (Cython modules patch ``collections.abc`` so as they are
    imported, and report an exception there as ignored; ``python -c``'s own code is the main
    module's, and is interrupted)."""
    if frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                              or frame.f_code.co_filename == "<string>"
                              and frame.f_globals.get("__name__") != "__main__"):
        return True
    while frame is not None:
        if frame.f_code.co_name == "__del__" or _finalizable_method(frame):
            return True
        frame = frame.f_back
    return False


def _finalizable_method(frame: FrameType) -> bool:
    """Whether ``frame`` is the ``__init__`` or the explicit destructor (``delete``) of an
    object with a finalizer. Interrupted in ``__init__``, the half-built object's ``__del__``
    may fail on what ``__init__`` did not set, and Python prints that as "Exception ignored"
    (PySAT's ``Cadical195`` when a signal hit a corpus run while its solver was built).
    Interrupted in ``delete`` between freeing the native object and forgetting it (PySAT's
    ``pysolvers.minisat22_del(self.minisat)`` then ``self.minisat = None``), ``__del__`` frees
    it again: a crash (exit -11 of ``crosscheck`` under SIGHUP in the fault suite)."""
    if frame.f_code.co_name not in ("__init__", "delete"):
        return False
    obj = frame.f_locals.get("self")
    return obj is not None and hasattr(type(obj), "__del__")


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """While the block runs (in the main thread), each of :data:`SIGNALS` raises
    KeyboardInterrupt; the previous handlers come back afterwards. Forked workers inherit the
    handlers, so a worker that a signal reaches stops as the parent does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    _received.clear()
    for s in SIGNALS:
        if previous[s] is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays ignored
            signal.signal(s, _raise)
    try:
        yield
    finally:
        try:
            # A deferred signal must not come after the handlers are gone (Python would
            # report it as ignored while the interpreter waits for its timer at exit).
            late = _take_back_deferred()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    if late is not None:  # it came during the block, which ended before it came again
        _received.append(late)
        raise KeyboardInterrupt


def _pysat_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is PySAT's error for a SIGINT it caught (:data:`PYSAT_INTERRUPT`)."""
    return isinstance(exc, Exception) and str(exc) == PYSAT_INTERRUPT


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Around PySAT calls: a SIGINT that PySAT caught raises KeyboardInterrupt (and counts as
    the signal that ended the run), so that callers stop as on any other Ctrl-C instead of
    taking it for a solver failure.

    PySAT installs its own SIGINT handler for each call made in the main thread, which jumps
    back into the call with ``longjmp``, and does not put the previous one back when it has
    caught the signal: a second SIGINT would jump into a call that has returned (a crash).
    The run's handler is installed again here. A run that ignores SIGINT (a background job,
    ``nohup``-like wrappers) keeps ignoring it: PySAT is told that the calls are not made in
    the main thread, the only case in which it leaves SIGINT alone."""
    main = threading.current_thread() is threading.main_thread()
    ignored = main and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    with _pysat_leaves_sigint() if ignored else contextlib.nullcontext():
        try:
            yield
        except Exception as exc:
            if _pysat_interrupt(exc):
                if main:
                    signal.signal(signal.SIGINT, signal.getsignal(signal.SIGINT))
                _received.append(signal.SIGINT)
                raise KeyboardInterrupt from exc
            raise


@contextlib.contextmanager
def _pysat_leaves_sigint() -> Iterator[None]:
    """PySAT's calls install no SIGINT handler in the block: they ask ``MainThread.check()``
    (one class, imported by each of its modules) whether to."""
    from pysat._utils import MainThread

    check = MainThread.__dict__["check"]
    MainThread.check = staticmethod(lambda: False)  # type: ignore[method-assign]
    try:
        yield
    finally:
        MainThread.check = check  # type: ignore[method-assign]


def raised_by_signal(exc: BaseException) -> bool:
    """Whether ``exc`` wraps the KeyboardInterrupt of a signal, or is PySAT's error for one:
    machinery that calls user code may re-raise what that code raised as another exception
    (Python 3.11 turns an exception in a descriptor's ``__set_name__``, such as a dataclass
    field's while its class is built on import, into ``RuntimeError("Error calling
    __set_name__ ...")``)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if _pysat_interrupt(cause):
            return True
        if isinstance(cause, KeyboardInterrupt):
            return bool(_received)
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def reraise_signal(exc: BaseException) -> None:
    """For code that turns exceptions into findings or messages: raise KeyboardInterrupt from
    ``exc`` when ``exc`` is a signal's (:func:`raised_by_signal`), so that the run stops as
    interrupted instead of reporting the signal as a crash."""
    if raised_by_signal(exc):
        raise KeyboardInterrupt from exc


def exit_status() -> int:
    """``128 + signal`` of the last signal that interrupted the run (SIGINT when none was seen:
    a KeyboardInterrupt raised by other means)."""
    return 128 + (_received[-1] if _received else signal.SIGINT)
