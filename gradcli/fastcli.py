"""A start-up fast path for well-formed command lines.

Typer builds its click command on every start, and the typer in use validates parameters
through pydantic: that costs ~70 ms, more than the whole of evaluating a small program.
Start-up is part of the product (the seed example must run within 2x ``import numpy``), so
``main()`` first offers the arguments to :func:`parse`, which reads the very declarations the
typer commands are made of (their ``typer.Option``/``typer.Argument`` defaults and type
hints: no second list of options) and binds a plain command line to keyword arguments.

Anything it is not sure about (help, an unknown or malformed option, a value that does not
convert, an option given twice that is not a list) returns ``None`` and typer parses the
command line instead, with its own messages and exit codes.
"""

from __future__ import annotations

import inspect
import os
import typing

_SCALARS = {int: int, float: float, str: str}


def _kind(hint):
    """(converter, is_list, is_flag) for a parameter's type hint, or None when unsupported."""
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) != 1:
            return None
        hint, origin = args[0], typing.get_origin(args[0])
    if origin in (list, typing.List):
        (item,) = typing.get_args(hint) or (str,)
        return (_SCALARS[item], True, False) if item in _SCALARS else None
    if hint is bool:
        return (None, False, True)
    return (_SCALARS[hint], False, False) if hint in _SCALARS else None


def parse(func, args: list[str]):
    """Keyword arguments for ``func`` (a typer command) from ``args``, or None to let typer decide."""
    import typer.models as tm
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        return None
    flags, values, positionals, envvars = {}, {}, [], []
    for name, param in inspect.signature(func).parameters.items():
        info = param.default
        kind = _kind(hints.get(name))
        if kind is None or not isinstance(info, tm.ParameterInfo):
            return None
        default = info.default
        if default is ... or callable(default):
            return None
        values[name] = list(default) if kind[1] and default else default
        if isinstance(info, tm.ArgumentInfo):
            positionals.append((name, kind))
            continue
        for decl in info.param_decls or ():
            if "/" in decl or not decl.startswith("-"):
                return None
            flags[decl] = (name, kind)
        if info.envvar:
            envvars.append((name, kind, info.envvar))
    given, rest, i = set(), [], 0
    try:
        for name, (convert, is_list, is_flag), envvar in envvars:
            if isinstance(envvar, str) and os.environ.get(envvar):
                if is_list or is_flag:
                    return None
                values[name] = convert(os.environ[envvar])
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                rest.extend(args[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            flag, eq, inline = arg.partition("=")
            if flag not in flags:
                return None  # -h, --help, unknown options, bundled short flags: typer's job
            name, (convert, is_list, is_flag) = flags[flag]
            if is_flag:
                if eq:
                    return None
                values[name] = True
            else:
                if not eq:
                    if i >= len(args):
                        return None
                    inline, i = args[i], i + 1
                value = convert(inline)
                if is_list:
                    values[name] = (values[name] or []) + [value]
                elif name in given:
                    return None
                else:
                    values[name] = value
            given.add(name)
        if len(rest) > len(positionals):
            return None
        for (name, (convert, _, _)), text in zip(positionals, rest):
            values[name] = convert(text)
    except ValueError:
        return None
    return values


def run(app, argv: list[str]):
    """Run ``argv`` through the fast path: the command's exit code, or None to let typer run it."""
    import typer
    if not argv:
        return None
    for info in app.registered_commands:
        if info.name == argv[0] and info.callback is not None:
            kwargs = parse(info.callback, argv[1:])
            if kwargs is None:
                return None
            try:
                rc = info.callback(**kwargs)
            except typer.Exit as exc:
                return exc.exit_code
            return rc if isinstance(rc, int) else 0
    return None
