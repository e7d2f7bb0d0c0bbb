"""Kiln from Python: load a spec, compile a composite, call it on NumPy arrays or PyTorch
tensors without a copy (docs/python.md).

    import kiln, numpy as np
    softmax = kiln.load("std:nn.toml").compile("softmax", batch_rank=1)
    y = softmax(np.random.rand(4, 1000).astype(np.float32))
"""

from . import _core
from ._autograd import Function
from ._errors import SpecError
from ._generate import Generation, generate
from ._info import Cache, ConfigKey, RuntimeInfo, config_keys, runtimes
from ._spec import Spec, load
from ._torch import torch_op
from ._weights import Weights

Kernel = _core.Kernel
cache = Cache()
__version__ = "0.1.0"

__all__ = ["Cache", "ConfigKey", "Function", "Generation", "Kernel", "RuntimeInfo", "Spec", "SpecError",
           "Weights", "cache", "config_keys", "generate", "load", "runtimes", "torch_op"]
