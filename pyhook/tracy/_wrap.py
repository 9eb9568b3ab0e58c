"""Decorators that record a function while it runs: tracy.profile and
tracy.zone used as decorators.

A generator, coroutine or async generator function runs later than its
call, and in steps: its call only makes the object. The wrapper is of the
same kind as the function (inspect sees a coroutine function as one), and
brackets every step the object runs (a next(), a send(), a throw(), a
resume by the event loop) with begin() and end(), so that what is recorded
is the function's own work, and not the caller's while it is suspended.
"""
import functools
import types

# code flags (Include/cpython/code.h)
_GENERATOR, _COROUTINE, _ASYNC_GENERATOR = 0x20, 0x80, 0x200


def _steps(it, begin, end):
    """Runs `it` (a generator, coroutine or async generator's awaitable) as
    `yield from it` would, bracketing each of its steps."""
    step, arg = it.send, None
    while True:
        on = begin()
        try:
            out = step(arg)
        except StopIteration as e:
            return e.value
        finally:
            end(on)
        try:
            arg = yield out
            step = it.send
        except GeneratorExit:
            it.close()
            raise
        except BaseException as e:  # thrown in: goes on into `it`
            step, arg = it.throw, e


@types.coroutine
def _awaited(it, begin, end):
    return (yield from _steps(it, begin, end))


def wrap(func, begin, end):
    """A wrapper of func of func's kind; begin() -> token, end(token)."""
    code = getattr(func, "__code__", None)
    flags = code.co_flags if code is not None else 0
    if flags & _GENERATOR:
        def wrapper(*args, **kwargs):
            return (yield from _steps(func(*args, **kwargs), begin, end))
    elif flags & _COROUTINE:
        async def wrapper(*args, **kwargs):
            return await _awaited(func(*args, **kwargs), begin, end)
    elif flags & _ASYNC_GENERATOR:
        async def wrapper(*args, **kwargs):
            agen = func(*args, **kwargs)
            step = agen.asend(None)
            while True:
                try:
                    item = await _awaited(step, begin, end)
                except StopAsyncIteration:
                    return
                try:
                    value = yield item
                except GeneratorExit:
                    await _awaited(agen.aclose(), begin, end)
                    raise
                except BaseException as e:
                    step = agen.athrow(e)
                else:
                    step = agen.asend(value)
    else:
        def wrapper(*args, **kwargs):
            on = begin()
            try:
                return func(*args, **kwargs)
            finally:
                end(on)
    return functools.wraps(func)(wrapper)
