"""Type stubs of the kiln package (docs/python.md)."""

import os
from typing import Any, Callable, Mapping, NamedTuple, Sequence, Union

__version__: str

_Path = Union[str, os.PathLike[str]]
_Array = Any  # a NumPy array, a PyTorch tensor, or anything with __dlpack__
_DType = Any  # "f32", numpy.float32, torch.bfloat16, ...

class SpecError(Exception):
    """A spec with an error; str(e) is the diagnostic with the line and a caret."""

    diagnostic: str
    file: str
    line: int
    column: int
    def __init__(self, diagnostic: str, file: str = ..., line: int = ..., column: int = ...) -> None: ...

class Kernel:
    """A composite compiled for one runtime, callable at any sizes."""

    composite: str
    runtime: str
    device: str
    """"cuda" when the runtime's kernels read CUDA memory, else "cpu"."""
    inputs: list[str]
    outputs: list[str]
    size_vars: list[str]
    def __call__(
        self,
        *args: _Array,
        out: Union[_Array, Sequence[Union[_Array, None]], None] = None,
        sizes: Union[Mapping[str, int], None] = None,
        stream: Any = None,
    ) -> Any:
        """Runs on the inputs; returns the output (or a tuple of them), allocated like the first
        input unless passed with out=. On CUDA the kernels are queued on ``stream`` (a
        torch.cuda.Stream, a cupy.cuda.Stream or a CUstream as an int; default: PyTorch's
        current stream when an argument is a tensor, else CUDA's default stream) and the call
        returns without waiting."""
    def bind(
        self,
        *args: _Array,
        out: Union[_Array, Sequence[Union[_Array, None]], None] = None,
        sizes: Union[Mapping[str, int], None] = None,
    ) -> dict[str, int]:
        """The size variables a call with these arguments binds, checking them; runs nothing."""
    def weights_changed(self) -> None:
        """A const input was changed in place: the next call reads it afresh."""
    def dtype(self, name: str) -> str: ...
    def symbolic_shape(self, name: str) -> list[str]: ...
    def shape(self, name: str, sizes: Mapping[str, int]) -> list[int]: ...
    def is_const(self, name: str) -> bool: ...

class Spec:
    """A loaded spec file or string and the files it uses."""

    name: str
    @staticmethod
    def from_string(text: str, name: str = "<string>") -> Spec: ...
    @property
    def composites(self) -> list[str]: ...
    def __contains__(self, name: str) -> bool: ...
    def doc(self, name: str) -> str: ...
    def compile(
        self,
        composite: str,
        runtime: str = "clang",
        *,
        dtype: Union[Mapping[str, _DType], None] = None,
        attrs: Union[Mapping[str, Any], None] = None,
        config: Union[Mapping[str, Any], None] = None,
        batch_rank: int = 0,
        specialize: Union[Mapping[str, int], None] = None,
        cache_dir: Union[_Path, None] = None,
        grad: Union[Sequence[str], None] = None,
        grad_save: Union[str, None] = None,
        grad_forward: bool = False,
    ) -> Kernel:
        """With ``grad``: the backward composite with respect to those float inputs instead
        (``grad_save``: what it takes from the forward pass; ``grad_forward``: the forward pass
        that gives it)."""
    def function(
        self, composite: str, runtime: str = "clang", *, wrt: Union[Sequence[str], None] = None,
        save: str = "stats", **settings: Any,
    ) -> Function:
        """The composite and its backward composite as a torch.autograd.Function."""

class Function:
    """A compiled composite and its compiled backward composite with respect to ``wrt``; called
    on PyTorch tensors it is differentiable (docs/python.md, "Autograd")."""

    forward_kernel: Kernel
    backward_kernel: Kernel
    wrt: tuple[str, ...]
    save: str
    @property
    def inputs(self) -> list[str]: ...
    @property
    def outputs(self) -> list[str]: ...
    def __call__(self, *inputs: Any) -> Any: ...

def load(path: _Path) -> Spec: ...
def torch_op(kernel: Kernel, qualname: str) -> Any:
    """Registers the kernel as the PyTorch operator ``qualname`` ("namespace::name"), usable in
    torch.compile graphs; returns torch.ops.namespace.name."""

class RuntimeInfo(NamedTuple):
    name: str
    descriptor: str
    backend: str
    device: str
    usable: bool
    note: str

class ConfigKey(NamedTuple):
    name: str
    stage: str
    default: str
    help: str
    in_cache_key: bool

class Weights:
    path: str
    def __init__(self, path: _Path) -> None: ...
    @property
    def metadata(self) -> dict[str, str]: ...
    def keys(self) -> list[str]: ...
    def dtype(self, name: str) -> str: ...
    def shape(self, name: str) -> tuple[int, ...]: ...
    def __getitem__(self, name: str) -> Any: ...
    def tensor(self, name: str) -> Any: ...
    def inputs_for(self, kernel: Kernel, **given: Any) -> list[Any]: ...
    def arrays_for(self, kernel: Kernel) -> dict[str, Any]: ...
    def items(self) -> list[tuple[str, Any]]: ...
    def __contains__(self, name: object) -> bool: ...
    def __iter__(self) -> Any: ...
    def __len__(self) -> int: ...

def runtimes() -> list[RuntimeInfo]: ...
def config_keys() -> list[ConfigKey]: ...

class Cache:
    def stats(self, dir: _Path = "") -> dict[str, Any]: ...
    def clear(self, dir: _Path = "") -> int: ...

cache: Cache

class Generation:
    tokens: list[int]
    prefill_seconds: float
    decode_seconds: float

def generate(step: Kernel, weights: Weights | Mapping[str, Any], prompt: Sequence[int],
             new_tokens: int, *, sizes: Mapping[str, int] | None = ...,
             on_token: Callable[[int], Any] | None = ..., decode_step: Kernel | None = ...
             ) -> Generation: ...
