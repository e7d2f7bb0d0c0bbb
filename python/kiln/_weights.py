"""kiln.Weights: a safetensors weights file, mapped; its tensors as NumPy arrays or PyTorch
tensors over the mapping, without a copy (docs/python.md "Weights")."""

import os

from . import _core


class Weights:
    """A safetensors file (the format Hugging Face ships models in), mapped for as long as this
    object or an array taken from it lives. The whole header is checked when the file is opened:
    a truncated or malformed file raises ValueError naming the file, the tensor and the fault.

        w = kiln.Weights("gpt2.safetensors")
        wte = w["wte.weight"]                  # numpy.ndarray, read-only, over the mapping
        t = w.tensor("wte.weight")             # torch.Tensor over the same bytes
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        try:
            self._w = _core.Weights.open(self.path)
        except RuntimeError as e:
            raise ValueError(str(e)) from None

    @property
    def metadata(self):
        """The header's "__metadata__" strings."""
        return dict(self._w.metadata)

    def keys(self):
        """The tensors' names, in the order of their data."""
        return list(self._w.names)

    def dtype(self, name):
        """Kiln's spelling of a tensor's dtype: "f32", "bf16", ..."""
        return self._w.dtype(self._known(name))

    def shape(self, name):
        return tuple(self._w.shape(self._known(name)))

    def __getitem__(self, name):
        """The tensor as a read-only NumPy array over the mapping (bf16: its uint16 bits)."""
        a = self._w.array(self._known(name))
        a.flags.writeable = False
        return a

    def tensor(self, name):
        """The tensor as a PyTorch tensor over the mapping (writes stay in this process: the
        file is mapped copy-on-write)."""
        import torch  # noqa: F401  (nanobind hands the tensor to torch)

        return self._w.tensor(self._known(name))

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def __contains__(self, name):
        return self._w.has(name)

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self._w.names)

    def __repr__(self):
        return f"kiln.Weights({self.path!r}: {len(self)} tensors)"

    def _known(self, name):
        if not self._w.has(name):
            raise KeyError(f"{self.path}: no tensor named {name!r}")
        return name
