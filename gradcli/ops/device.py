"""Moving tensors between devices (``x.to('cuda')``, ``x.cpu()``), recorded as ToCopyBackward0."""

from __future__ import annotations

from ..backend import get_backend
from ..autograd.grad_mode import STATE
from ..autograd.node import Node, new_node
from ..autograd.tensor import Tensor


class ToCopyBackward0(Node, register=False):
    """Backward of a device move: the gradient goes back to the source device. torch has one
    ToCopyBackward0 for dtype and device; the op table lists the dtype one (``gradcli.ops.shape``)."""

    __slots__ = ()
    derivatives = (("self", "grad.to(self.device)"),)
    input_names = ("self",)
    attr_names = ("source",)

    def apply(self, grad, F, differentiable):
        (source,) = self._attrs
        if differentiable:
            return [to_device(grad, source.name)]
        return [source.from_host(F.backend.to_host(grad))]


def to_device(t: Tensor, device: str) -> Tensor:
    target = get_backend(device)
    if target is t._backend:
        return t
    source = t._backend
    data = target.from_host(source.to_host(t._data))
    if STATE.enabled and t._requires_grad:
        edge = ((t.grad_fn or t._accumulator()), t.output_nr)
        node = new_node(ToCopyBackward0, (), data, (source,), None, (edge,))
        return Tensor._make(data, target, node)
    return Tensor._make(data, target)
