"""An expression compiled once to flat code: instructions run in order on a stack of values.

Why: a loop runs the same statements thousands of times, and walking an expression's tree
each time (every node visited twice, a table lookup, a list of children and a stack entry
per visit) was most of what the evaluator cost per statement beyond the ops themselves. The
code is the tree in post-order (children before their parent), with jumps for the
short-circuit forms (``and``/``or``, ``x if c else y``); it is made by an explicit-stack walk
(no recursion on depth) and run by :meth:`gradcli.lang.evaluator.Evaluator._eval_gen`.

An instruction is ``(opcode, node, argument)``; ``node`` is where an error is reported.
"""

from __future__ import annotations

from .ast import (
    Attribute, BinOp, BoolOp, Call, Compare, Const, EllipsisLit, IfExp, ListComp, Name, Num, Str, UnaryOp,
)

# opcodes, in the order the evaluator tests them (the frequent ones first)
NAME = 0          # push the variable ``argument`` (a name)
CONST = 1         # push ``argument``
BINARY = 2        # pop b, a; push ``a argument b`` (``argument``: the operator)
ATTRIBUTE = 3     # replace the top value v by ``v.argument``
CALL = 4          # pop ``argument`` values; push the call's value (it may be a call of the program's own function)
APPLY = 5         # pop ``argument[0]`` values; push ``argument[1](evaluator, node, values, scope)``
COMPARE = 6       # pop b, a; push ``a argument b``
UNARY = 7         # replace the top value v by ``argument v``
SHORT = 8         # ``and``/``or``: keep the top value and jump to ``argument`` if it decides, else pop it
JUMP_UNLESS = 9   # pop a value; jump to ``argument`` if it is false
JUMP = 10         # jump to ``argument``
LISTCOMP = 11     # push the value of the list comprehension ``node``

_CONSTANTS = (Num, Str, Const)
_VISIT, _EMIT, _LABEL = 0, 1, 2


def compile_expression(root, rules) -> list:
    """The code of the expression ``root``. ``rules`` maps the other node classes to
    ``(children, combine)`` (the evaluator's table): their children's code, then one APPLY."""
    code: list = []
    tasks = [(_VISIT, root)]
    push = tasks.append
    while tasks:
        kind, item = tasks.pop()
        if kind == _EMIT:
            code.append(item)
            continue
        if kind == _LABEL:  # a jump emitted earlier lands here
            item[2] = len(code)
            continue
        node = item
        cls = node.__class__
        if cls is Name:
            code.append((NAME, node, node.id))
        elif cls in _CONSTANTS:
            code.append((CONST, node, node.value))
        elif cls is BinOp or cls is Compare:
            push((_EMIT, (BINARY if cls is BinOp else COMPARE, node, node.op)))
            push((_VISIT, node.right))
            push((_VISIT, node.left))
        elif cls is Attribute:
            push((_EMIT, (ATTRIBUTE, node, node.attr)))
            push((_VISIT, node.value))
        elif cls is UnaryOp:
            push((_EMIT, (UNARY, node, node.op)))
            push((_VISIT, node.operand))
        elif cls is BoolOp:  # left, SHORT (to the end), right
            jump = [SHORT, node, None]
            push((_LABEL, jump))
            push((_VISIT, node.right))
            push((_EMIT, jump))
            push((_VISIT, node.left))
        elif cls is IfExp:  # test, JUMP_UNLESS (to orelse), body, JUMP (to the end), orelse
            to_else, to_end = [JUMP_UNLESS, node, None], [JUMP, node, None]
            push((_LABEL, to_end))
            push((_VISIT, node.orelse))
            push((_LABEL, to_else))
            push((_EMIT, to_end))
            push((_VISIT, node.body))
            push((_EMIT, to_else))
            push((_VISIT, node.test))
        elif cls is ListComp:
            code.append((LISTCOMP, node, None))
        elif cls is EllipsisLit:
            code.append((CONST, node, Ellipsis))
        elif node is None:  # an absent part of a slice (``x[1:]``)
            code.append((CONST, None, None))
        else:
            rule = rules.get(cls)
            if rule is None:
                code.append((APPLY, node, (0, _unsupported)))
                continue
            children, combine = rule
            kids = children(node)
            push((_EMIT, (CALL if cls is Call else APPLY, node, len(kids) if cls is Call else (len(kids), combine))))
            for child in reversed(kids):
                push((_VISIT, child))
    return [tuple(i) if i.__class__ is list else i for i in code]


def _unsupported(ev, node, args, scope):
    from ..errors import GradTypeError
    raise GradTypeError(f"unsupported expression {node.__class__.__name__}")
