"""Choosing a device: ``--device cuda`` / ``cuda:N`` / ``GRADCLI_DEVICE``, each way of not having a
GPU (exit 3 with a message saying which and how to fix it), and CUDA tensors as torch shows them.

No test here needs a GPU: CuPy is replaced by fake modules (a missing package, a broken install,
a runtime with no driver, no device or too few devices, and a working "CuPy" that computes with
NumPy) so that the CUDA side of the seam runs on any machine. The last tests use the real CuPy
and are marked ``gpu``; they skip cleanly without one.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import gradcli as gc
from gradcli import backend as backend_mod
from gradcli.ops import creation
from gradcli.errors import AutogradError, DeviceError, GradTypeError
from helpers import clean_engine_state  # noqa: F401
from test_backends import CASES, _run


@pytest.fixture(autouse=True)
def fresh_backends(monkeypatch):
    """Each test starts with only the CPU backend known, and leaves the real ones behind it."""
    monkeypatch.setattr(backend_mod, "_cache", {"cpu": backend_mod.NUMPY})
    monkeypatch.delenv("GRADCLI_DEVICE", raising=False)
    several, default = backend_mod.SEVERAL[0], creation.DEFAULT_DEVICE[0]
    creation.DEFAULT_DEVICE[0] = "cpu"
    yield
    backend_mod.SEVERAL[0], creation.DEFAULT_DEVICE[0] = several, default


class CUDARuntimeError(RuntimeError):
    pass


# What CuPy before NumPy 2's array-API names lacks (backend._CupyNamespace supplies them)
PRE_ARRAY_API = {"astype", "permute_dims", "concat", "bool"}


def _numpy_name(name):
    if name in PRE_ARRAY_API:
        raise AttributeError(name)
    return getattr(np, name)


def fake_cupy(count=1, error=None):
    """A stand-in for CuPy: NumPy's functions with CuPy 13's signatures (no array-API names, no
    ``asarray(copy=)``, ``var(ddof=)`` only), plus the CUDA runtime calls the backend makes."""
    cupy = types.ModuleType("cupy")
    cupy.__getattr__ = _numpy_name  # module __getattr__ (PEP 562): xp.exp is np.exp
    cupy.asnumpy = lambda a: np.asarray(a)
    cupy.asarray = lambda a, dtype=None, order=None: np.asarray(a, dtype=dtype)
    cupy.array = lambda a, dtype=None, copy=True: np.array(a, dtype=dtype, copy=copy)
    cupy.reshape = lambda a, newshape: np.reshape(a, newshape)
    cupy.var = lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: \
        np.var(a, axis=axis, ddof=ddof, keepdims=keepdims)
    cupy.std = lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: \
        np.std(a, axis=axis, ddof=ddof, keepdims=keepdims)
    cupy.sort = lambda a, axis=-1, kind=None: np.sort(a, axis=axis, kind="stable")  # no stable=
    cupy.argsort = lambda a, axis=-1, kind=None: np.argsort(a, axis=axis, kind="stable")
    calls = []

    def get_device_count():
        if error is not None:
            raise error
        return count

    class Device:
        def __init__(self, index):
            self.index = index

        def use(self):
            calls.append(("use", self.index))

    class Stream:
        def synchronize(self):
            calls.append(("synchronize",))

    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=get_device_count,
                                      getDeviceProperties=lambda index: {"name": b"Fake GPU"}),
        Device=Device, get_current_stream=Stream)
    cupy.__version__ = "13.0.0 (fake)"
    cupy.get_default_memory_pool = lambda: types.SimpleNamespace(total_bytes=lambda: 0, used_bytes=lambda: 0)
    cupy.calls = calls
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = lambda target, index, values: np.add.at(target, index, values)
    return cupy, cupyx


def install(monkeypatch, cupy, cupyx=None):
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    if cupyx is not None:
        monkeypatch.setitem(sys.modules, "cupyx", cupyx)


@pytest.fixture
def gpu(monkeypatch):
    """A working one-GPU "CuPy"."""
    cupy, cupyx = fake_cupy(count=2)
    install(monkeypatch, cupy, cupyx)
    return cupy


def run(capsys, *args):
    from gradcli.cli import main
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- each way of not having a GPU: exit 3, which one, and how to fix it ------------------------------

def test_no_cupy(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ModuleNotFoundError
    with pytest.raises(DeviceError) as info:
        gc.tensor([1.0], device="cuda")
    assert info.value.exit_code == 3
    assert str(info.value) == ("CuPy is not installed, and device 'cuda:0' needs it: pip install 'gradcli[gpu]' "
                               "(CuPy for CUDA 12), or use --device cpu")
    code, out, err = run(capsys, "eval", "x * 2", "-l", "x=ones(2)", "--device", "cuda")
    assert code == 3 and out == ""
    assert err.startswith("error: CuPy is not installed") and "pip install 'gradcli[gpu]'" in err
    assert "Traceback" not in err


def test_no_cupy_json(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)
    code, out, _ = run(capsys, "eval", "1", "--device", "cuda:1", "--json")
    doc = json.loads(out)
    assert code == 3 and doc["error"]["kind"] == "device" and doc["device"] == "cuda:1"
    assert "pip install 'gradcli[gpu]'" in doc["error"]["message"]


def test_broken_cupy_install(monkeypatch):
    class Finder:  # CuPy is there, but its CUDA libraries are not
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "cupy":
                raise ImportError("libcudart.so.12: cannot open shared object file: No such file or directory")
            return None

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Finder()] + sys.meta_path)
    with pytest.raises(DeviceError, match=r"^CuPy is installed but failed to import, so device 'cuda:0' cannot be "
                                          r"used \(ImportError: libcudart.so.12: cannot open shared object file"):
        gc.ones(2, device="cuda")


def test_cupy_missing_a_dependency_is_not_reported_as_missing_cupy(monkeypatch):
    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "cupy":
                raise ModuleNotFoundError("No module named 'fastrlock'", name="fastrlock")
            return None

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Finder()] + sys.meta_path)
    with pytest.raises(DeviceError, match="CuPy is installed but failed to import, .*fastrlock"):
        gc.ones(2, device="cuda")


@pytest.mark.parametrize("error, what", [
    (CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"),
     "the NVIDIA driver is missing or too old for this CuPy"),
    (CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected"), "no CUDA GPU was found"),
    (CUDARuntimeError("cudaErrorUnknown: unknown error"), "CUDA could not be initialised"),
])
def test_no_driver_or_no_device(monkeypatch, capsys, error, what):
    install(monkeypatch, fake_cupy(error=error)[0])
    with pytest.raises(DeviceError) as info:
        gc.ones(2, device="cuda")
    message = str(info.value)
    assert message.startswith(f"device 'cuda:0' is not available: {what} (CUDARuntimeError: {error})")
    assert message.endswith("or use --device cpu")
    code, _, err = run(capsys, "eval", "1", "--device", "cuda")
    assert code == 3 and f"error: device 'cuda:0' is not available: {what}" in err


def test_zero_devices(monkeypatch):
    install(monkeypatch, fake_cupy(count=0)[0])
    with pytest.raises(DeviceError, match=r"^device 'cuda:0' is not available: no CUDA GPU was found: run on a "
                                          r"machine with an NVIDIA GPU, or use --device cpu$"):
        gc.ones(2, device="cuda:0")


def test_bad_index(monkeypatch, capsys):
    install(monkeypatch, fake_cupy(count=2)[0])
    with pytest.raises(DeviceError) as info:
        gc.ones(2, device="cuda:2")
    assert str(info.value) == ("device 'cuda:2' does not exist: this machine has 2 CUDA devices (cuda:0, cuda:1): "
                               "use cuda:0, cuda:1, or --device cpu")
    install(monkeypatch, fake_cupy(count=1)[0])
    code, _, err = run(capsys, "eval", "1", "--device", "cuda:7")
    assert code == 3 and "error: device 'cuda:7' does not exist: this machine has 1 CUDA device (cuda:0)" in err


@pytest.mark.parametrize("device, message", [
    ("cuda:x", "Invalid device string: 'cuda:x'"),
    ("cuda:-1", "Invalid device string: 'cuda:-1'"),
    ("tpu", "Expected one of cpu, cuda device type at start of device string: tpu"),
])
def test_malformed_device_strings(device, message, capsys):
    with pytest.raises(DeviceError) as info:
        gc.ones(1, device=device)
    assert str(info.value) == message
    code, _, err = run(capsys, "eval", "1", "--device", device)
    assert code == 2 and f"error: {message}\nhint: --device takes cpu, cuda or cuda:N" in err  # bad input


def test_cupy_is_imported_only_for_a_cuda_device(capsys):
    import subprocess
    code = ("import sys, gradcli, gradcli.cli; gradcli.cli.main(['eval', 'sum(x * 2)', '-l', 'x=ones(3)']); "
            "sys.exit('cupy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_environment_variable_chooses_the_device(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setenv("GRADCLI_DEVICE", "cuda")
    code, _, err = run(capsys, "eval", "1")
    assert code == 3 and "CuPy is not installed" in err
    code, out, _ = run(capsys, "eval", "1", "--device", "cpu")  # the option wins over the variable
    assert code == 0


# -- CUDA tensors as torch shows them (a working fake CuPy) --------------------------------------------

def test_backend_and_device_objects(gpu):
    b = backend_mod.get_backend("cuda")
    assert b is backend_mod.get_backend("cuda:0") and b.name == "cuda:0" and b.device_type == "cuda"
    assert ("use", 0) in gpu.calls
    x = gc.tensor([1.0, 2.0], device="cuda")
    assert repr(x.device) == "device(type='cuda', index=0)" and str(x.device) == "cuda:0"
    assert x.is_cuda and not gc.tensor([1.0]).is_cuda
    b.synchronize()
    assert gpu.calls[-1] == ("synchronize",)
    backend_mod.NUMPY.synchronize()  # nothing to wait for on the CPU
    assert backend_mod.get_backend("cuda:1").index == 1


def test_reprs_show_the_device_as_torch(gpu):
    # the exact strings torch prints for CUDA tensors
    x = gc.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)"
    assert repr(gc.tensor([1, 2], device="cuda:1")) == "tensor([1, 2], device='cuda:1')"
    assert repr(gc.zeros(0, 3, device="cuda")) == "tensor([], device='cuda:0', size=(0, 3))"
    assert repr(gc.tensor(2.5, dtype=gc.float64, device="cuda")) == \
        "tensor(2.5000, device='cuda:0', dtype=torch.float64)"
    assert repr(x.cpu()) == "tensor([1., 2.], grad_fn=<ToCopyBackward0>)"


def test_moves_record_tocopy_and_gradients_come_back(gpu):
    x = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)  # CPU leaf
    w = gc.tensor([0.5, -1.0, 2.0], device="cuda", requires_grad=True)  # CUDA leaf
    for moved in (x.cuda(), x.to("cuda"), x.to("cuda:0"), x.cuda(0), x.to(w)):
        assert moved.grad_fn.name() == "ToCopyBackward0" and str(moved.device) == "cuda:0"
    y = (gc.exp(x.cuda()) * w).sum()
    z = y.cpu() * 2
    assert z.grad_fn.name() == "MulBackward0" and z.grad_fn.next_functions[0][0].name() == "ToCopyBackward0"
    z.backward()
    assert str(x.grad.device) == "cpu" and str(w.grad.device) == "cuda:0"
    v = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    np.testing.assert_allclose(x.grad.tolist(), 2 * np.exp(v) * [0.5, -1.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(w.grad.tolist(), 2 * np.exp(v), rtol=1e-6)


def test_move_under_create_graph(gpu):
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    y = (x.cuda() ** 3).sum()
    (g,) = gc.autograd.grad(y, x, create_graph=True)
    assert str(g.device) == "cpu" and g.grad_fn is not None
    (gg,) = gc.autograd.grad(g.sum(), x)
    assert gg.tolist() == [6.0, 12.0]


def test_a_move_that_is_not_one(gpu):
    x = gc.tensor([1.0], device="cuda", requires_grad=True)
    assert x.cuda() is x and x.to("cuda:0") is x and x.cpu().cpu().grad_fn.name() == "ToCopyBackward0"
    assert x.to("cuda:1").grad_fn.name() == "ToCopyBackward0"


@pytest.mark.parametrize("make", [
    lambda a, b: a + b, lambda a, b: b + a, lambda a, b: a * b.double(), lambda a, b: gc.maximum(b, a),
    lambda a, b: gc.where(a > 0, a, b), lambda a, b: a - b[:1],
])
def test_mixing_devices_says_which_as_torch(gpu, make):
    a = gc.tensor([1.0, 2.0], device="cuda")
    b = gc.tensor([3.0, 4.0])
    with pytest.raises(DeviceError) as info:
        make(a, b)
    # torch's TensorIterator names the first non-CPU device first, whichever side it is on
    assert str(info.value) == ("Expected all tensors to be on the same device, but found at least two devices, "
                               "cuda:0 and cpu!")
    assert info.value.exit_code == 3


def test_two_gpus_do_not_mix(gpu):
    a = gc.tensor([1.0], device="cuda:1")
    b = gc.tensor([1.0], device="cuda:0")
    with pytest.raises(DeviceError, match="found at least two devices, cuda:1 and cuda:0!"):
        a + b


def test_cuda_program_on_the_command_line(gpu, capsys):
    code, out, _ = run(capsys, "eval", "y = x * 2\nz = sum(y[[0, 0, 1]])\nz.backward()\nprint(x.grad)",
                       "-g", "x=ones(3)", "--device", "cuda", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["device"] == "cuda"
    assert {v["name"]: v["device"] for v in doc["variables"]} == {"x": "cuda:0", "y": "cuda:0", "z": "cuda:0"}
    assert doc["printed"] == ["tensor([4., 2., 0.], device='cuda:0')"]
    code, out, _ = run(capsys, "eval", "x * 2", "-l", "x=ones(2)", "--device", "cuda")
    assert code == 0 and "device='cuda:0'" in out


def test_hook_messages_name_cuda_types(gpu):
    from gradcli.autograd.engine import _type_name
    x = gc.tensor([1.0], device="cuda")
    assert (_type_name(x), _type_name(x.double()), _type_name(x.cpu())) == \
        ("torch.cuda.FloatTensor", "torch.cuda.DoubleTensor", "torch.FloatTensor")


# -- the real thing, where there is one ------------------------------------------------------------------

def _real_gpu():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs CuPy and a CUDA device")
def test_real_cuda_device(monkeypatch):
    monkeypatch.undo()  # the real backends
    cupy = pytest.importorskip("cupy")
    x = gc.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert isinstance(x._data, cupy.ndarray)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    (gc.sin(x) * gc.exp(x) + x ** 2).mean().backward()
    v = np.array([1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(x.grad.tolist(), (np.exp(v) * (np.sin(v) + np.cos(v)) + 2 * v) / 2, rtol=1e-5)
    assert isinstance(x.grad._data, cupy.ndarray)
    with pytest.raises(DeviceError, match="cuda:0 and cpu!"):
        gc.tensor([1.0]) + x
    y = gc.tensor([1.0], device="cuda", requires_grad=True)
    y.register_hook(lambda g: g.double())
    with pytest.raises(GradTypeError, match=r"\(was torch.cuda.FloatTensor got torch.cuda.DoubleTensor\)"):
        (y * 2).sum().backward()
    count = cupy.cuda.runtime.getDeviceCount()
    with pytest.raises(DeviceError, match=f"device 'cuda:{count}' does not exist"):
        gc.ones(1, device=f"cuda:{count}")


# -- the whole op table through the CuPy namespace (with the fake: NumPy underneath) ---------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_op_table_through_the_cupy_namespace(gpu, name):
    """Forward, first and second derivatives of every table entry on "cuda:0" equal the CPU's: the
    namespace's stand-ins for array-API names (astype, permute_dims, concat, asarray(copy=),
    var(correction=), reshape(copy=False)) compute what NumPy 2's own functions do."""
    fn, specs = CASES[name]
    seed = sum(map(ord, name))
    got = _run(fn, specs, "cuda", seed)
    want = _run(fn, specs, "cpu", seed)
    assert str(got[0].device) == "cuda:0"
    pairs = [(got[0], want[0])] + list(zip(got[1], want[1])) + list(zip(got[2] or (), want[2] or ()))
    for g, w in pairs:
        assert str(g.device) == "cuda:0"
        np.testing.assert_allclose(np.asarray(g._data), np.asarray(w._data), rtol=1e-12, atol=1e-14)
        assert g.dtype == w.dtype


def test_view_that_needs_a_copy_is_refused_through_the_namespace(gpu):
    x = gc.ones(2, 3, device="cuda")
    with pytest.raises(Exception, match="view size is not compatible"):
        x.t().view(6)
    assert x.t().reshape(6).grad_fn is None and x.t().reshape(6).shape == (6,)


def test_constants_are_made_on_the_gpu(gpu, monkeypatch):
    made = []
    monkeypatch.setattr(gpu, "full", lambda shape, value, dtype=None: made.append(shape) or np.full(shape, value, dtype),
                        raising=False)
    x = gc.ones(2, 3, device="cuda")
    y = gc.full((4,), 7, device="cuda")
    z = gc.zeros(5, dtype=gc.float64, device="cuda", requires_grad=True)
    assert made == [(2, 3), (4,), (5,)]
    assert (x.dtype, y.dtype, z.dtype) == (gc.float32, gc.int64, gc.float64) and z.requires_grad
    assert y.tolist() == [7, 7, 7, 7] and str(z.device) == "cuda:0"


def test_numpy_of_a_cuda_tensor_fails_as_torch(gpu):
    x = gc.tensor([1.0], device="cuda", requires_grad=True)
    with pytest.raises(GradTypeError) as info:
        x.detach().numpy()
    assert str(info.value) == ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                               "to host memory first.")
    assert x.detach().cpu().numpy().tolist() == [1.0]


def test_numpy_under_no_grad_as_torch():
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(AutogradError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    with gc.no_grad():
        assert x.numpy().tolist() == [1.0, 2.0]


# -- benchmarks/bench_gpu.py ---------------------------------------------------------------------------

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_gpu.py"


def test_gpu_benchmark_without_a_gpu_says_so_and_succeeds(monkeypatch):
    import subprocess
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(BENCH.parent.parent)}
    code = ("import sys; sys.modules['cupy'] = None; sys.argv = ['bench_gpu.py', '--n', '10']; "
            f"sys.path.insert(0, {str(BENCH.parent)!r}); import runpy; "
            f"runpy.run_path({str(BENCH)!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no GPU: CuPy is not installed")


def test_gpu_benchmark_runs_end_to_end(gpu, monkeypatch, capsys):
    """On the fake GPU (NumPy underneath): the script's engines agree and it prints its table."""
    import runpy
    monkeypatch.syspath_prepend(str(BENCH.parent))
    bench = runpy.run_path(str(BENCH))
    assert bench["main"](["--n", "1000", "--rounds", "2", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert "DIFFERS" not in out
    assert "| gradcli " in out and "| cupy (hand-written gradient) " in out
    assert "n = 1,000 float32 on cuda (Fake GPU)" in out
