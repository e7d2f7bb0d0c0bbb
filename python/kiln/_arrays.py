"""Output arrays of the caller's kind: a PyTorch tensor when the first input is one, else a
NumPy array, or on CUDA a CuPy array or a tensor (docs/python.md, "Outputs"). Called by kiln._core for every output the caller did
not pass with out=."""

import sys

_NUMPY_NAMES = {
    "f64": "float64", "f32": "float32", "f16": "float16",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8",
    "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8", "bool": "bool",
}
_TORCH_NAMES = dict(_NUMPY_NAMES, bf16="bfloat16")
_numpy_dtypes = {}  # Kiln name -> numpy.dtype, filled on first use (numpy imports lazily)
_numpy_empty = None


def _numpy_dtype(dtype):
    global _numpy_empty
    import numpy

    if dtype not in _NUMPY_NAMES:
        raise TypeError(
            f"an output of dtype {dtype} cannot be a NumPy array (NumPy has no {dtype}): "
            "pass PyTorch tensors, or an array of that dtype with out=")
    _numpy_empty = numpy.empty
    _numpy_dtypes[dtype] = numpy.dtype(_NUMPY_NAMES[dtype])
    return _numpy_dtypes[dtype]


_torch_dtypes = {}  # Kiln name -> torch.dtype


def _torch_empty(torch, like, shape, dtype):
    t = _torch_dtypes.get(dtype)
    if t is None:
        t = _torch_dtypes[dtype] = getattr(torch, _TORCH_NAMES[dtype])
    if like.dtype is t and like.shape == shape:  # an elementwise output: 0.8 us, not 1.2
        return torch.empty_like(like, memory_format=torch.contiguous_format)
    return torch.empty(shape, dtype=t, device=like.device)


def _device_empty(like, shape, dtype):
    """CUDA memory on device 0 for an output when the first input is no PyTorch tensor: a CuPy
    array when it is one (or CuPy alone is loaded), else a PyTorch tensor."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and (isinstance(like, cupy.ndarray) or "torch" not in sys.modules):
        if dtype not in _NUMPY_NAMES:
            raise TypeError(f"an output of dtype {dtype} cannot be a CuPy array: pass out=")
        with cupy.cuda.Device(0):
            return cupy.empty(shape, _NUMPY_NAMES[dtype])
    try:
        import torch
    except ImportError:
        raise TypeError("a CUDA kernel's outputs are allocated with PyTorch or CuPy, and neither "
                        "is installed: pass the outputs with out=") from None
    return torch.empty(shape, dtype=getattr(torch, _TORCH_NAMES[dtype]), device="cuda:0")


def allocate(like, shape, dtype, device=False):
    """An output array: of the first input's kind (``like``) and on its device; ``device`` says
    that the kernel runs on CUDA device 0."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        return _torch_empty(torch, like, shape, dtype)
    if device:
        return _device_empty(like, shape, dtype)
    np_dtype = _numpy_dtypes.get(dtype) or _numpy_dtype(dtype)
    return _numpy_empty(shape, np_dtype)


def dtype_name(value):
    """A Kiln dtype name from a name ("f16") or a NumPy or PyTorch dtype (numpy.float16,
    torch.bfloat16)."""
    if isinstance(value, str):
        return value
    text = str(value).removeprefix("torch.")
    if text not in _TORCH_NAMES.values():
        import numpy

        text = numpy.dtype(value).name
    for kiln_name, name in _TORCH_NAMES.items():
        if name == text:
            return kiln_name
    raise TypeError(f"no Kiln dtype for {value!r}")
