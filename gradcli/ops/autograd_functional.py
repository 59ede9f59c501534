"""``torch.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp, as torch computes them.

The function may be any Python callable taking tensors and returning a tensor or a tuple of
tensors (a program's lambda or def is one). Inputs are detached copies that require grad
(under ``create_graph=True`` an input that requires grad is used through an alias, so the result
stays connected to it); results are detached unless ``create_graph``. Row by row as torch's
``vectorize=False``: one ``autograd.grad`` per output element, ``stack`` and ``view`` into
``output.shape + input.shape``; jvp and hvp use torch's double-backward trick. Inputs a output
does not depend on give zeros, or torch's error with ``strict=True``.
"""

from __future__ import annotations

from ..autograd.engine import grad as _grad
from ..autograd.grad_mode import set_grad_enabled
from ..autograd.tensor import Tensor
from ..errors import AutogradError, GradTypeError, ShapeError
from .creation import zeros_like
from .registry import op
from .shape import stack


def _as_tuple(value, what: str, fn_name: str):
    is_tuple = isinstance(value, (tuple, list)) and not isinstance(value, Tensor)
    values = tuple(value) if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            if is_tuple:
                raise GradTypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                                    f"but the value at index {i} has type {_py_type(v)}.")
            raise GradTypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                                f"the given {what} has type {_py_type(v)}.")
    return is_tuple, values


def _py_type(v) -> str:
    return f"<class '{type(v).__name__}'>"


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _preprocess(inputs, create_graph: bool, need_graph: bool):
    """Inputs as the function sees them: aliases that keep the graph under create_graph, else
    detached copies requiring grad (``need_graph``)."""
    out = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            out.append(inp.view(tuple(inp.shape)))
        else:
            out.append(inp.detach().requires_grad_(need_graph))
    return tuple(out)


def _postprocess(values, create_graph: bool):
    if isinstance(values, Tensor):
        return values if create_graph else values.detach()
    return tuple(_postprocess(v, create_graph) for v in values)


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad; all None when none does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs = [o for o, _ in pairs]
    grads = [g for _, g in pairs]
    return _grad(outs, list(inputs), grads, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)


def _fill_in_zeros(grads, refs, strict: bool, stage: str):
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise AutogradError(_STRICT[stage].format(i))
            g = zeros_like(ref)
        out.append(g)
    return tuple(out)


_STRICT = {"back": "The output of the user-provided function is independent of input {}. This is not allowed "
                   "in strict mode.",
           "back_trick": "The gradient with respect to the input is independent of entry {} in the grad_outputs "
                         "when using the double backward trick to compute forward mode gradients. This is not "
                         "allowed in strict mode.",
           "double_back_trick": "The jacobian of the user-provided function is independent of input {}. This is "
                                "not allowed in strict mode."}


def _check_v(v, other, is_other_tuple, what="v"):
    if len(other) != len(v):
        if is_other_tuple:
            raise ShapeError(f"{what} is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise ShapeError(f"The given {what} should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise ShapeError(f"{prepend}{what} has invalid size: should be {list(el_other.shape)} but got "
                             f"{list(el_v.shape)}.")


def _call(func, inputs, fn_name):
    return _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)


@op(method=False, category="autograd", namespaces=("torch.autograd.functional",))
def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: output.shape + input.shape per (output, input) pair."""
    if vectorize or strategy != "reverse-mode":
        raise GradTypeError("jacobian: only vectorize=False with strategy='reverse-mode' is supported by gradcli")
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _preprocess(inputs, create_graph, True)
        is_outputs_tuple, outputs = _call(func, inputs, "jacobian")
        result = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape((-1,))
            for j in range(out.numel()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for k, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                    if g is None:
                        if strict:
                            raise AutogradError(f"Output {i} of the user-provided function is independent of "
                                                f"input {k}. This is not allowed in strict mode.")
                        g = zeros_like(inp)
                    row.append(g)
            result.append(tuple(stack(row, 0).view(tuple(out.shape) + tuple(inputs[k].shape))
                                for k, row in enumerate(rows)))
        result = _postprocess(tuple(result), create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


@op(method=False, category="autograd", namespaces=("torch.autograd.functional",))
def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one element: input.shape + input.shape per pair of inputs."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def single_output(*inp):
        out = func(*inp)
        is_tuple, _ = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if is_tuple:
            raise AutogradError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise AutogradError("The Tensor returned by the function given to hessian should contain a single "
                                "element")
        return out.reshape(())

    def jac_func(*inp):
        return jacobian(single_output, inp, create_graph=True)

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _vector(v, refs, is_refs_tuple, create_graph, fn_name, single_message):
    if v is None:
        if len(refs) != 1 or refs[0].numel() != 1:
            raise AutogradError(single_message)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _preprocess(v, create_graph, False)
    _check_v(v, refs, is_refs_tuple)
    return v


_V_OUTPUT = ("The vector v can only be None if the user-provided function returns a single Tensor with a single "
             "element.")
_V_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with a "
            "single element.")


@op(method=False, category="autograd", namespaces=("torch.autograd.functional",))
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _preprocess(inputs, create_graph, True)
        is_outputs_tuple, outputs = _call(func, inputs, "vjp")
        v = _vector(v, outputs, is_outputs_tuple, create_graph, "vjp", _V_OUTPUT)
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, "back")
    return (_tuple_postprocess(_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_postprocess(result, create_graph), is_inputs_tuple))


@op(method=False, category="autograd", namespaces=("torch.autograd.functional",))
def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product (torch's double-backward trick)."""
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _preprocess(inputs, create_graph, True)
        v = _vector(v, inputs, is_inputs_tuple, create_graph, "jvp", _V_INPUT)
        is_outputs_tuple, outputs = _call(func, inputs, "jvp")
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        grads = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, outputs, strict, "back_trick")
    return (_tuple_postprocess(_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_postprocess(result, create_graph), is_outputs_tuple))


def _second_order(func, inputs, v, create_graph, strict, name, vector_first):
    with set_grad_enabled(True):
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
        inputs = _preprocess(inputs, create_graph, True)
        v = _vector(v, inputs, is_inputs_tuple, create_graph, name, _V_INPUT)
        is_outputs_tuple, outputs = _call(func, inputs, name)
        if is_outputs_tuple or len(outputs) != 1:
            raise AutogradError(f"The function given to {name} should return a single Tensor")
        if outputs[0].numel() != 1:
            raise AutogradError(f"The Tensor returned by the function given to {name} should contain a single element")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        if vector_first:  # vhp: v^T H
            grads = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        else:             # hvp: H v, by the double-backward trick
            grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
            double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
            grads = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, "double_back_trick")
    return (_tuple_postprocess(_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_postprocess(result, create_graph), is_inputs_tuple))


@op(method=False, category="autograd", namespaces=("torch.autograd.functional",))
def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian-vector product of a function returning one element."""
    return _second_order(func, inputs, v, create_graph, strict, "hvp", False)


@op(method=False, category="autograd", namespaces=("torch.autograd.functional",))
def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of a function returning one element."""
    return _second_order(func, inputs, v, create_graph, strict, "vhp", True)

