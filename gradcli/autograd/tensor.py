"""The Tensor: an array plus the autograd state PyTorch's ``Variable`` carried.

A tensor holds ``_data`` (an array of its backend) and, when it is the output of a
recorded operation, ``grad_fn``, the graph node that computes its inputs'
gradients. Leaves that require grad own an ``AccumulateGrad`` node (created on
first use, held weakly as in PyTorch) that adds incoming gradients into ``.grad``.

Operations (``+``, ``exp``, ``sum``...) and their method forms are attached by
``gradcli.ops`` from the op table, so this module holds only state and the
members SPEC §2 lists.
"""

from __future__ import annotations

import weakref

from ..backend import dtypes as _dt
from ..backend import NUMPY, Backend
from ..errors import AutogradError, DimensionError, GradTypeError, RuntimeTypeError, ShapeError
from ..limits import TRACK_BYTES as _TRACK_BYTES, check_host_objects as _check_host_objects, track as _track
from .grad_mode import STATE as _GRAD

_ndarray_type = type(NUMPY.xp.empty(0))
_NUMPY_DTYPES: dict = {}  # NumPy dtype -> gradcli dtype (Tensor.dtype)
_NUMPY_SCALARS = frozenset(type(NUMPY.xp.dtype(n).type(0)) for n in ("float16", "float32", "float64", "int32",
                                                                     "int64", "bool"))
_as_array = NUMPY.xp.asarray
_object_new = object.__new__
_SIZES: dict = {}  # shape tuple -> its torch.Size (Tensor.shape)


_views = None  # gradcli.autograd.views (which imports this module), once first needed


_AccumulateGrad = None  # gradcli.autograd.node.AccumulateGrad, once first needed (node imports this module)


def _import_accumulate_grad():
    """AccumulateGrad, imported on first use and kept: a leaf whose graph was freed (each step of a
    training loop) makes a new one, and an import statement there cost ~1 us a leaf."""
    global _AccumulateGrad
    from .node import AccumulateGrad
    _AccumulateGrad = AccumulateGrad
    return AccumulateGrad


def _import_views():
    """The views module, imported on first use and kept: an import statement in a method costs
    ~0.7 us a call, and in-place ops check their input's views on every call."""
    global _views
    from . import views
    _views = views
    return views


class _PrintOptions:
    """``torch.set_printoptions`` for gradcli's reprs (the CLI's --precision)."""

    __slots__ = ("precision",)

    def __init__(self):
        self.precision = 4


PRINT_OPTIONS = _PrintOptions()


class _NoVersion(list):
    """The version counter of an inference tensor (made under ``inference_mode``): torch gives
    those none. One shared instance marks them (``t._vc.__class__ is _NoVersion``); views and
    ``detach()`` share their root's counter, so they are inference tensors too, as in torch; no
    node ever saves one (``inference_saved`` refuses), so no version check reads it."""

    __slots__ = ()


class _CountedInference(_NoVersion):
    """``detach()`` of an inference tensor outside inference mode: still an inference tensor, but
    torch gives it a version counter of its own, and lets it change in place."""

    __slots__ = ()


INFERENCE_VC = _NoVersion([0])
ON_BUMP = [None]  # views.on_bump, set when .views (which imports this module) is imported


def is_inference_vc(vc) -> bool:
    """Does a tensor with version counter ``vc`` count as an inference tensor?"""
    return vc is not None and vc.__class__ is not list
INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                   "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
                   "normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
                   "`torch.inference_mode()`.")
INFERENCE_INPLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
                     "to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 "
                     "for more details.")


def inference_saved():
    """The error for recording a node that would save an inference tensor (torch's words)."""
    return AutogradError(INFERENCE_SAVED)


class Detached:
    """``Tensor._view`` of a non-leaf after ``detach_()``: nodes recorded before it (``seq`` is
    the node counter's value then) that saved the tensor fail backward with torch's message."""

    __slots__ = ("seq",)

    def __init__(self, seq):
        self.seq = seq


_DEEPCOPY_NON_LEAF = ("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
                      "the moment.  If you were attempting to deepcopy a module, this may be because of a "
                      "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")


class Tensor:
    __slots__ = ("_data", "_backend", "_requires_grad", "_fn", "_grad", "_vc",
                 "_acc", "_hooks", "_retains_grad", "_view", "__weakref__")

    # -- construction -----------------------------------------------------------
    def __init__(self, data, requires_grad: bool = False, *, backend: Backend = NUMPY):
        _track(data)
        self._data = data
        self._backend = backend
        self._requires_grad = False
        self._fn = None
        self._grad = None
        # version counter: a shared [n] once needed (None: version 0); INFERENCE_VC under inference_mode
        self._vc = INFERENCE_VC if _GRAD.inference else None
        self._acc = None
        self._hooks = None
        self._retains_grad = False
        self._view = None  # a views.ViewInfo for a view; Detached once detached in place
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _make(data, backend: Backend, grad_fn=None) -> "Tensor":
        """Fast constructor for op results (no validation; a plain function, not a classmethod:
        nothing subclasses Tensor, and a call then binds nothing)."""
        t = _object_new(Tensor)
        if data.__class__ is not _ndarray_type:
            if data.__class__ in _NUMPY_SCALARS:  # a full reduction's result: backend.fix, inlined
                data = _as_array(data)  # 0-d: never big enough for _track to count
            else:
                data = backend.fix(data)
                _track(data)
        elif data.nbytes >= _TRACK_BYTES:  # counted against --max-memory (limits.track)
            _track(data)
        t._data = data
        t._backend = backend
        t._requires_grad = grad_fn is not None
        t._fn = grad_fn
        t._grad = None
        t._vc = INFERENCE_VC if _GRAD.inference else None
        t._acc = None
        t._hooks = None
        t._retains_grad = False
        t._view = None
        return t

    # -- autograd state -----------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        flag = bool(requires_grad)
        if self.grad_fn is not None:
            if not flag:
                raise AutogradError(
                    "you can only change requires_grad flags of leaf variables. If you want to use "
                    "a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return self
        if flag and not _dt.DTYPES[self._backend.dtype_name(self._data)].is_floating_point:
            raise RuntimeTypeError("only Tensors of floating point dtype can require gradients")
        if flag and is_inference_vc(self._vc) and not _GRAD.inference:
            raise AutogradError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if getattr(self._view, "derived", False):  # a view made under no_grad: it requires grad as its base does
            self._view.derived = not flag  # requires_grad_(True): an AccumulateGrad of its own
            return self
        self._requires_grad = flag
        return self

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (a row of ``unbind``: its index; else 0)."""
        info = self._view
        return 0 if info is None else getattr(info, "output_nr", 0)

    @property
    def is_leaf(self) -> bool:
        if self.grad_fn is None and self._view is not None:
            self._check_view()
        return self.grad_fn is None

    def _check_view(self) -> None:
        """torch reads a view's grad_fn here: one made under no_grad or by unbind/split whose base
        was changed in place since raises (views.resolve)."""
        (_views or _import_views()).resolve(self)

    @property
    def grad(self):
        if self._grad is None and self.grad_fn is not None and not self._retains_grad:
            from .warn import NON_LEAF_GRAD, warn
            warn(NON_LEAF_GRAD)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is self:
            raise AutogradError("can't assign Variable as its own grad")
        if value is not None and not isinstance(value, Tensor):
            raise GradTypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
        if value is not None and value.shape != self.shape:
            raise ShapeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                             f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size")
        if value is not None and value.dtype.name != self.dtype.name:
            names = {"float32": ("float", "Float"), "float64": ("double", "Double"), "float16": ("c10::Half", "Half"),
                     "int64": ("long int", "Long"), "int32": ("int", "Int"), "bool": ("bool", "Bool")}
            raise RuntimeTypeError(
                f"attempting to assign a gradient with dtype '{names.get(value.dtype.name, ('?',))[0]}' to a tensor "
                f"with grad_dtype '{names.get(self.dtype.name, ('', '?'))[1]}'. The gradient must match the tensor's "
                f"grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a "
                f"specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a "
                f"tensor and its gradient may break downstream systems that assume they match.")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        if not self._requires_grad:
            raise AutogradError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None and self._view is not None:
            self._check_view()
        if self.grad_fn is None or self._retains_grad:
            return  # a no-op for leaves, as in PyTorch
        if self.grad_fn.multi_output:
            self.grad_fn.retain(self.output_nr, self)
        else:
            self.grad_fn._retain = weakref.ref(self)
        self._retains_grad = True

    def _accumulator(self):
        """This leaf's gradient edge: its AccumulateGrad node, shared by every op that uses the leaf
        (a view's: views.view_edge, None for one made under no_grad)."""
        if self._view is not None:
            return (_views or _import_views()).view_edge(self)
        ref = self._acc  # the usual case, on every recorded op: the shared one is alive
        acc = ref() if ref is not None else None
        return acc if acc is not None else self._leaf_accumulator()

    def _leaf_accumulator(self):
        """The AccumulateGrad every op using this leaf shares, while any of them is alive (a weak
        reference, as torch's grad_accumulator_), else a new one."""
        ref = self._acc
        acc = ref() if ref is not None else None
        if acc is None:
            acc = (_AccumulateGrad or _import_accumulate_grad())(self)
            self._acc = weakref.ref(acc)
        return acc

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a replacement."""
        from .node import RemovableHandle
        if not self._requires_grad:
            raise AutogradError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None and self._view is not None:
            self._check_view()
        if self.grad_fn is not None and self.grad_fn.multi_output:
            hooks = self.grad_fn.hooks_of(self.output_nr)
        elif self.grad_fn is not None:
            hooks = self.grad_fn._pre_hooks
            if hooks is None:
                hooks = self.grad_fn._pre_hooks = {}
        else:
            hooks = self._hooks
            if hooks is None:
                hooks = self._hooks = {}
        return RemovableHandle(hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        from .engine import backward
        if gradient is not None and gradient.__class__ is not Tensor:
            # torch fails here too (with "'int' object is not iterable"); say what is meant
            raise GradTypeError(f"backward(): gradient must be a Tensor or None, not {type(gradient).__name__}")
        backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)

    def detach(self) -> "Tensor":
        """A new leaf sharing this tensor's data and version counter, outside the graph."""
        t = Tensor._make(self._data, self._backend)
        if self._vc is None:
            self._vc = [0]
        t._vc = self._vc
        if self._vc.__class__ is not list and not _GRAD.inference:
            t._vc = _CountedInference([0])  # torch's quirk: an inference tensor with a version counter
        self._link_saved_result()
        return t

    def detach_(self) -> "Tensor":
        """Cut this tensor from the graph in place (a node that saved it then refuses to run)."""
        from .views import DETACH_VIEW, is_view
        if is_view(self):
            raise AutogradError(DETACH_VIEW)
        if self.grad_fn is not None:
            from .node import _sequence
            self._view = Detached(next(_sequence))
        self._fn = None
        self._requires_grad = False
        return self

    # ``grad_fn`` is a property over the slot ``_fn``, not a plain slot read through a class
    # ``__getattr__``: on CPython 3.11 a class defining ``__getattr__`` loses the interpreter's
    # specialised attribute reads for EVERY attribute of its instances (``t._data``, ``t._backend``
    # ... on every op): about 0.5 us of a recorded 2x2 op and its backward.
    @property
    def grad_fn(self):
        """The node that made this tensor (None for a leaf). A view whose base changed in place
        since its grad_fn was last read has ``_fn`` unset (views._refresh_views empties it): its
        AsStridedBackward0 is made now, as torch's VariableHooks::grad_fn does."""
        try:
            return self._fn
        except AttributeError:
            from .views import regenerate
            return regenerate(self)

    @grad_fn.setter
    def grad_fn(self, node) -> None:
        self._fn = node

    def __deepcopy__(self, memo):
        """``copy.deepcopy``, as torch's: only a leaf (no grad_fn) may be copied; the copy has its own
        storage (at version 1, as torch's ``set_`` leaves it), the same requires_grad, and a deep
        copy of ``.grad``. Without this, Python's default copied a non-leaf's whole graph."""
        if not self.is_leaf:
            raise AutogradError(_DEEPCOPY_NON_LEAF)
        new = memo.get(id(self))
        if new is None:
            import copy
            new = Tensor._make(self._backend.xp.asarray(self._data, copy=True), self._backend)
            new._vc = [1]
            new._requires_grad = self._requires_grad
            memo[id(self)] = new
            if self._grad is not None:
                new._grad = copy.deepcopy(self._grad, memo)
        return new

    @property
    def _base(self):
        """The tensor this one is a view of (the root of a chain of views), or None."""
        return (_views or _import_views()).base_of(self)

    def _is_view(self) -> bool:
        return (_views or _import_views()).is_view(self)

    @property
    def data(self) -> "Tensor":
        """The same storage as a tensor that does not require grad (and, as in torch, its own version)."""
        return Tensor._make(self._data, self._backend)

    @data.setter
    def data(self, value: "Tensor") -> None:
        data = value._data if isinstance(value, Tensor) else self._backend.asarray(value)
        if self._requires_grad and not _dt.DTYPES[self._backend.dtype_name(data)].is_floating_point:
            raise AutogradError("data set to a tensor that requires gradients must be floating point or "
                                "complex dtype")
        self._data = data

    # -- in-place ---------------------------------------------------------------------
    def _check_inplace(self) -> None:
        """torch's checks before an in-place change (leaf, view of a leaf, view made under no_grad)."""
        (_views or _import_views()).check_inplace(self)

    def _link_saved_result(self) -> None:
        """Before this tensor (or a detached alias) changes in place: if its grad_fn saved it as its
        output (exp, sigmoid, tanh...), hand that node the version counter, so that its backward
        fails as torch's does instead of reading the modified values."""
        node = self.grad_fn
        if node is not None and getattr(node, "_sr", None) is not None and getattr(node, "_vr", None) is None:
            vc = self._vc
            if vc is None:
                vc = self._vc = [0]
            node._vr = (vc, vc[0])

    def _bump(self) -> None:
        """After an in-place change. On an inference tensor outside inference mode torch refuses the
        change only once it is made (its kernel has run): so does this, at the same point."""
        if self._vc is None:
            self._vc = [1]
        elif self._vc.__class__ is _NoVersion:
            if not _GRAD.inference:
                raise AutogradError(INFERENCE_INPLACE)
        else:
            self._vc[0] += 1
            hook = ON_BUMP[0]
            if hook is not None:
                hook(self)

    def _version_now(self) -> int:
        """The version counter's value (torch's ``t._version``)."""
        return 0 if self._vc is None else self._vc[0]

    @property
    def _version(self) -> int:
        """torch's ``t._version``: how many in-place changes this storage has seen (shared by views)."""
        if self._vc.__class__ is _NoVersion:
            raise AutogradError("Inference tensors do not track version counter.")
        return 0 if self._vc is None else self._vc[0]

    # -- metadata ------------------------------------------------------------------------
    @property
    def shape(self) -> _dt.Size:
        shape = self._data.shape
        size = _SIZES.get(shape)  # one immutable Size per shape: ops read .shape many times a call
        if size is None:
            if len(_SIZES) >= 4096:
                _SIZES.clear()
            size = _SIZES[shape] = _dt.Size(shape)
        return size

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> _dt.dtype:
        data = self._data
        if data.__class__ is _ndarray_type:  # read by nearly every op: one lookup per NumPy dtype
            found = _NUMPY_DTYPES.get(data.dtype)
            if found is None:
                found = _NUMPY_DTYPES[data.dtype] = _dt.DTYPES[self._backend.dtype_name(data)]
            return found
        return _dt.DTYPES[self._backend.dtype_name(data)]

    @property
    def device(self) -> _dt.device:
        return _dt.device(self._backend.name)

    @property
    def is_cuda(self) -> bool:
        return self._backend.device_type == "cuda"

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return _dt.Size(self._data.shape).numel()

    def __len__(self) -> int:
        if not self._data.ndim:
            raise GradTypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    # -- conversion -----------------------------------------------------------------------
    def numpy(self):
        if self._backend.device_type == "cuda":  # torch's checks, in torch's order
            raise GradTypeError(f"can't convert {self._backend.name} device type tensor to numpy. Use Tensor.cpu() "
                                f"to copy the tensor to host memory first.")
        if self._requires_grad and _GRAD.enabled:  # under no_grad torch allows it
            raise AutogradError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._backend.to_host(self._data)

    def tolist(self):
        _check_host_objects(self.numel(), "tolist()'s list")
        return self._backend.to_host(self._data).tolist()

    def item(self):
        if self.numel() != 1:
            raise RuntimeTypeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._backend.to_host(self._data).reshape(()).item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeTypeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.category != 1 or self.numel() != 1:
            raise GradTypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __pos__(self) -> "Tensor":
        return self

    def __repr__(self) -> str:
        from .tensor_str import format_tensor
        from .legacy import repr_prefix  # "Parameter containing:" for an nn.Parameter
        grad_fn = None if self.grad_fn is None else self.grad_fn.name_for_repr()
        if grad_fn is None and self._view is not None:
            try:
                self._check_view()
            except AutogradError:
                grad_fn = "Invalid"  # torch's repr of a view whose grad_fn cannot be read
        return repr_prefix(self) + format_tensor(
            self._backend.to_host(self._data), dtype=self.dtype.name, precision=PRINT_OPTIONS.precision,
            requires_grad=self._requires_grad and grad_fn is None,
            grad_fn=grad_fn,
            device=self._backend.name if self._backend.device_type == "cuda" else "cpu",
            default_float=_dt.DEFAULTS.float.name)

    __str__ = __repr__


def _wrap_dim(dim: int, ndim: int) -> int:
    if dim.__class__ is not int:
        dim = int(dim)
    n = ndim if ndim > 1 else 1
    if not -n <= dim < n:
        raise DimensionError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim
