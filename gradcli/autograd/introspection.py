"""What torch lets a program see and attach on a ``grad_fn``: ``_saved_*`` fields, hooks, metadata.

- ``node._saved_<name>``: what the node saved for its backward, under torch's names: the inputs
  and the result its formulas read (None where this instance did not need to save them; torch's
  error once backward has freed them), its attributes (``_saved_dim``, ``_saved_exponent``...),
  and the inputs' sizes (``_saved_self_sym_sizes``). A Python number an op was given is shown
  as torch wraps it: a 0-d int64 or float64 tensor. Nodes whose attributes are stored in
  another form than torch's (indexing keys, mm's strides...) translate them in :data:`_FIELDS`.
- ``node.register_hook(fn)``: ``fn(grad_inputs, grad_outputs)`` after the node ran, may return
  replacement grad_inputs; ``node.register_prehook(fn)``: ``fn(grad_outputs)`` before, may return
  replacement grad_outputs; ``node.metadata``: a dict of the program's own.
- ``tensor.register_post_accumulate_grad_hook(fn)``: ``fn(tensor)`` after a leaf's ``.grad``
  has been accumulated.

Hooks and metadata live in side tables (weak on the node), so nodes without any cost nothing
more: the engine checks one dict for emptiness.
"""

from __future__ import annotations

import weakref

from ..errors import AutogradError, GradTypeError
from . import node as _node
from .node import _FREED, NEW_CLASS_HOOKS, Node, RemovableHandle
from .tensor import Tensor

NODE_HOOKS: "weakref.WeakKeyDictionary[Node, _Hooks]" = weakref.WeakKeyDictionary()
POST_ACCUMULATE: dict = {}   # id(leaf) -> (weakref to the leaf, {handle id: hook})


class _Hooks:
    __slots__ = ("pre", "post", "metadata", "packed")

    def __init__(self):
        self.pre = {}
        self.post = {}
        self.metadata = {}
        self.packed = None  # (unpack, [(slot, packed value)]) under saved_tensors_hooks


def _hooks(node: Node) -> _Hooks:
    entry = NODE_HOOKS.get(node)
    if entry is None:
        entry = NODE_HOOKS[node] = _Hooks()
    return entry


def register_hook(self: Node, fn) -> RemovableHandle:
    """``fn(grad_inputs, grad_outputs)`` after this node runs; a returned tuple replaces grad_inputs."""
    return RemovableHandle(_hooks(self).post, fn)


def register_prehook(self: Node, fn) -> RemovableHandle:
    """``fn(grad_outputs)`` before this node runs; a returned tuple replaces grad_outputs."""
    return RemovableHandle(_hooks(self).pre, fn)


def metadata(self: Node) -> dict:
    return _hooks(self).metadata


# -- running them (called by the engine when NODE_HOOKS has an entry for the node) ------------------

def _wrap(g, backend, create_graph):
    if g is None or create_graph or isinstance(g, Tensor):
        return g
    return Tensor._make(g, backend)


def _unwrap(out, like, create_graph, what):
    if out is None:
        return None
    if not isinstance(out, Tensor):
        raise GradTypeError(f"hook returned a {type(out).__name__} where a gradient Tensor (or None) was expected "
                            f"in {what}")
    return out if create_graph else out._data


def _results(out, n, what):
    if not isinstance(out, (tuple, list)):
        raise GradTypeError(f"hook '{what}' must return a tuple of gradients or None, not {type(out).__name__}")
    if len(out) != n:
        raise GradTypeError(f"hook '{what}' returned {len(out)} gradients, but {n} were expected")
    return out


def run_prehooks(node: Node, g, backend, create_graph: bool):
    entry = NODE_HOOKS.get(node)
    if entry is None:
        return g
    if entry.packed is not None:
        _restore_packed(node, entry)
    if not entry.pre:
        return g
    if g.__class__ is list:  # a multi-output node: one gradient per output
        return _run_prehooks_slots(entry, g, backend, create_graph)
    for fn in list(entry.pre.values()):
        out = fn((_wrap(g, backend, create_graph),))
        if out is not None:
            g = _unwrap(_results(out, 1, "register_prehook")[0], g, create_graph, "register_prehook")
    return g


def _run_prehooks_slots(entry, slots, backend, create_graph: bool):
    for fn in list(entry.pre.values()):
        out = fn(tuple(_wrap(g, backend, create_graph) for g in slots))
        if out is not None:
            out = _results(out, len(slots), "register_prehook")
            slots = [_unwrap(o, g, create_graph, "register_prehook") for o, g in zip(out, slots)]
    return slots


def run_posthooks(node: Node, grads, g_out, backend, create_graph: bool):
    entry = NODE_HOOKS.get(node)
    if entry is None or not entry.post:
        return grads
    outputs = tuple(_wrap(g, backend, create_graph) for g in g_out) if g_out.__class__ is list else \
        (_wrap(g_out, backend, create_graph),)
    for fn in list(entry.post.values()):
        inputs = tuple(_wrap(g, backend, create_graph) for g in (grads or ()))
        out = fn(inputs, outputs)
        if out is not None:
            out = _results(out, len(inputs), "register_hook")
            grads = [_unwrap(o, g, create_graph, "register_hook") for o, g in zip(out, grads)]
    return grads


def register_post_accumulate_grad_hook(self: Tensor, hook) -> RemovableHandle:
    """Call ``hook(tensor)`` after this leaf's ``.grad`` has been accumulated (torch 2.1+)."""
    if self.grad_fn is not None:
        raise AutogradError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self._requires_grad:
        raise AutogradError("cannot register a hook on a tensor that doesn't require gradient")
    key = id(self)
    entry = POST_ACCUMULATE.get(key)
    if entry is None or entry[0]() is not self:
        entry = POST_ACCUMULATE[key] = (weakref.ref(self, lambda _r, k=key: POST_ACCUMULATE.pop(k, None)), {})
    return RemovableHandle(entry[1], hook)


def run_post_accumulate(leaf: Tensor) -> None:
    entry = POST_ACCUMULATE.get(id(leaf))
    if entry is None or entry[0]() is not leaf:
        return
    for hook in list(entry[1].values()):
        if hook(leaf) is not None:
            raise GradTypeError("post accumulate grad hooks should return None")


# -- saved_tensors_hooks ---------------------------------------------------------------------------

class saved_tensors_hooks:
    """``torch.autograd.graph.saved_tensors_hooks(pack, unpack)``: while active, every tensor an op
    saves for backward goes through ``pack(tensor)`` when it is saved, and what that returned
    through ``unpack(packed)`` when backward (or ``_saved_*``) needs it."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _node.SAVED_HOOKS.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _node.SAVED_HOOKS.pop()
        return False


def pack_saved(node: Node) -> None:
    """Pack the saved tensors of a just-recorded node (inputs in torch's order, then the result)."""
    pack, unpack = _node.SAVED_HOOKS[-1]
    live = node._live
    if not live:
        return
    values = node._saved[0]
    packed = []
    for slot in reversed(range(len(values))):
        if isinstance(values[slot], Tensor):
            packed.append((slot, pack(values[slot])))
    if node._sr is not None:
        packed.append(("result", pack(Tensor._make(node._sr, node._result_backend(), node))))
    _hooks(node).packed = (unpack, packed)


def _unpacked(node: Node, entry, only=None) -> dict:
    unpack, packed = entry.packed
    out = {}
    for slot, value in packed:
        if only is not None and slot != only:
            continue
        t = unpack(value)
        if not isinstance(t, Tensor):
            raise GradTypeError(f"unpack_hook must return a Tensor, not {type(t).__name__}")
        out[slot] = t
    return out


def _restore_packed(node: Node, entry) -> None:
    """Put what unpack returns where backward reads the saved values."""
    if node._live is False:
        return
    for slot, t in _unpacked(node, entry).items():
        if slot == "result":
            node._sr = t._data
        elif node._k > 2:
            values, versions = node._sx
            node._sx = (values[:slot] + (t,) + values[slot + 1:],
                        versions[:slot] + (_version(t),) + versions[slot + 1:])
        elif slot == 0:
            node._s0, node._v0 = t, _version(t)
        else:
            node._s1, node._v1 = t, _version(t)
    entry.packed = None


def _version(t: Tensor) -> int:
    return t._version


_node.PACK_SAVED[0] = pack_saved


# -- _saved_* fields -------------------------------------------------------------------------------

def _as_saved(value, node):
    """A saved value as torch shows it: tensors as they are, Python numbers wrapped."""
    if value is None or isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float)):
        from .factory import tensor
        return tensor(value, dtype="float64" if isinstance(value, float) else None)
    backend = node._result_backend()
    return Tensor._make(value, backend)


def _input_field(index):
    def get(node):
        if node._live is False:
            raise AutogradError(_FREED)
        entry = NODE_HOOKS.get(node)
        if entry is not None and entry.packed is not None:
            unpacked = _unpacked(node, entry, index)
            if index in unpacked:
                return unpacked[index]
        saved = node._saved
        values = saved[0] if saved else ()
        value = values[index] if index < len(values) else None
        return _as_saved(value, node)
    return get


def _result_field(node):
    if node._live is False:
        raise AutogradError(_FREED)
    entry = NODE_HOOKS.get(node)
    if entry is not None and entry.packed is not None:
        unpacked = _unpacked(node, entry, "result")
        if "result" in unpacked:
            t = unpacked["result"]
            return Tensor._make(t._data, t._backend, node)
    if node._sr is None:
        return None
    return Tensor._make(node._sr, node._result_backend(), node)


def _sizes_field(index):
    def get(node):
        shapes = node._shapes
        if shapes is not None and shapes[index] is not None:
            return tuple(shapes[index])
        saved = node._saved
        value = saved[0][index] if saved and saved[0] and index < len(saved[0]) else None
        return tuple(value.shape) if isinstance(value, Tensor) else None
    return get


def _attr_field(index):
    def get(node):
        value = node._attrs[index]
        if hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, Tensor):
            # an array the op kept (an index, a mask, a loss's target): a tensor torch saves, so
            # freed with the graph as the saved inputs are
            if node._live is False:
                raise AutogradError(_FREED)
            return Tensor._make(value, node._result_backend())
        return value
    return get


def _plain_attrs(cls):
    """The attributes shown as fields: not gradcli's internal objects (a device move's backend)."""
    return [(i, name) for i, name in enumerate(cls.attr_names) if name not in _HIDDEN and name != "source"]


def _strides(shape):
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= max(s, 1)
    return tuple(reversed(out))


def _key_fields(node):
    """(dim, index or slice) of a SelectBackward0/SliceBackward0 key: the one entry not ``:``."""
    key = node._attrs[0]
    key = key if isinstance(key, tuple) else (key,)
    for dim, item in enumerate(key):
        if item is Ellipsis:
            break
        if not (isinstance(item, slice) and item == slice(None)):
            return dim, item
    return 0, slice(None)


def _slice_part(part, default):
    def get(node):
        dim, item = _key_fields(node)
        value = getattr(item, part)
        return default(node, dim) if value is None else value
    return get


def _indices(node):
    from .factory import tensor
    key = node._attrs[0]
    key = [k for k in (key if isinstance(key, tuple) else (key,)) if k is not Ellipsis]
    while key and isinstance(key[-1], slice) and key[-1] == slice(None):  # torch lists no trailing ':'
        key.pop()
    return tuple(None if isinstance(k, slice) else tensor(k.tolist() if hasattr(k, "tolist") else k) for k in key)


def _numel(node):
    n = 1
    for s in _sizes_field(0)(node):
        n *= s
    return n


# Nodes whose torch fields are not their inputs/attributes as gradcli names them: field -> getter
# (an attribute of gradcli's not listed here and not in _HIDDEN shows under its own name).
_FIELDS = {
    "SelectBackward0": {"dim": lambda n: _key_fields(n)[0], "index": lambda n: _key_fields(n)[1]},
    "SliceBackward0": {"dim": lambda n: _key_fields(n)[0], "start": _slice_part("start", lambda n, d: 0),
                       "end": _slice_part("stop", lambda n, d: 9223372036854775807),
                       "step": _slice_part("step", lambda n, d: 1)},
    "IndexBackward0": {"indices": _indices},
    # unbind/split: torch keeps the dim as given, a negative one printed as the uint64 it is stored in
    "UnbindBackward0": {"dim": lambda n: n._attrs[1] % (1 << 64)},
    "SplitBackward0": {"dim": lambda n: n._attrs[2] % (1 << 64), "split_size": lambda n: n._attrs[1],
                       "self_sym_sizes": _sizes_field(0)},
    "SplitWithSizesBackward0": {"dim": lambda n: n._attrs[1] % (1 << 64), "split_sizes": lambda n: n._attrs[2],
                                "self_sym_sizes": _sizes_field(0)},
    "MeanBackward0": {"self_sym_numel": _numel},
    "MeanBackward1": {"self_sym_numel": _numel},
    "MmBackward0": {"self_sym_sizes": _sizes_field(0), "mat2_sym_sizes": _sizes_field(1),
                    "self_sym_strides": lambda n: _strides(_sizes_field(0)(n)),
                    "mat2_sym_strides": lambda n: _strides(_sizes_field(1)(n))},
}
_HIDDEN = {"key", "shape"}  # gradcli's own forms of what _FIELDS translates


def saved_fields(cls) -> dict:
    """``{field: getter(node)}`` for a node class (cached on the class)."""
    table = cls.__dict__.get("_fields_cache")
    if table is not None:
        return table
    table = {}
    uses = set().union(*cls._uses) if "_uses" in cls.__dict__ and cls._uses else set()
    for i, name in enumerate(cls.input_names):
        if name in uses:
            table[name] = _input_field(i)
        if f"{name}_sizes" in uses:
            table[f"{name}_sym_sizes"] = _sizes_field(i)
    if cls.save_result or "result" in uses:
        table["result"] = _result_field
    for i, name in _plain_attrs(cls):
        table[name] = _attr_field(i)
    table.update(_FIELDS.get(cls.__name__, {}))
    setattr(cls, "_fields_cache", table)
    return table


def install_saved_fields(cls) -> None:
    """torch's ``grad_fn._saved_<field>`` attributes of a node class, as properties on it. Not a
    ``Node.__getattr__``: on CPython 3.11 a class with ``__getattr__`` loses the interpreter's
    specialised attribute reads for every attribute of its instances, and the engine and the
    recording read node slots on every op (~0.3 us of a 2x2 op and its backward)."""
    for field, getter in saved_fields(cls).items():
        name = "_saved_" + field
        if name not in cls.__dict__:
            setattr(cls, name, property(getter))


def _install_everywhere() -> None:
    """The node classes made before this module (autograd's own), then every later one."""
    stack = [Node]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls is not Node:
            install_saved_fields(cls)
    NEW_CLASS_HOOKS.append(install_saved_fields)


def _node_dir(self):
    return sorted(set(object.__dir__(self)) | {f"_saved_{f}" for f in saved_fields(type(self))}
                  | {"metadata", "register_hook", "register_prehook"})


_install_everywhere()
Node.__dir__ = _node_dir
Node.register_hook = register_hook
Node.register_prehook = register_prehook
Node.metadata = property(metadata)
Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
