"""``torch.autograd.graph``: the saved-tensor hooks context manager."""

from .introspection import saved_tensors_hooks  # noqa: F401
