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

    def inputs_for(self, kernel, **given):
        """The arrays a compiled kernel takes, in its input order, as `kiln run --weights` finds
        them: the tensor of each input's name, else the one whose name reads as it with every '.'
        an '_' (`ln_f.weight` for `ln_f_weight`), else numbered blocks stacked along a new leading
        axis (`h.0.ln_1.weight` ... `h.11.ln_1.weight` for `h_ln_1_weight`: a copy). Inputs the
        file does not hold come from `given` by name (token ids); one missing from both, two
        tensors that read as one input, or a stack with a block missing or of another shape is a
        ValueError naming it.

            logits = gpt2(*w.inputs_for(gpt2, ids=ids))
        """
        out = []
        for input_name in kernel.inputs:
            if input_name in given:
                out.append(given[input_name])
                continue
            a = self._find(input_name)
            if a is None:
                raise ValueError(f"{self.path}: no tensor for input {input_name!r} of "
                                 f"{kernel.composite!r}, and it is not given")
            out.append(a)
        return out

    def arrays_for(self, kernel):
        """{input name: array} for each input of `kernel` the file holds, found as inputs_for
        finds them (kiln.generate takes a step's weights so)."""
        found = {}
        for input_name in kernel.inputs:
            a = self._find(input_name)
            if a is not None:
                found[input_name] = a
        return found

    def _find(self, input_name):
        """The array for input `input_name` (inputs_for's rules), or None."""
        import numpy as np

        if input_name in self:
            return self[input_name]
        dotted = [n for n in self.keys() if n.replace(".", "_") == input_name]
        if len(dotted) > 1:
            raise ValueError(f"{self.path}: tensors {dotted[0]!r} and {dotted[1]!r} both read as "
                             f"input {input_name!r}")
        if dotted:
            return self[dotted[0]]
        blocks = []
        for name in self.keys():
            parts = name.split(".")
            for i, part in enumerate(parts):
                if part.isdigit():
                    if "_".join(parts[:i] + parts[i + 1:]) == input_name:
                        blocks.append((int(part), name))
                    break
        if not blocks:
            return None
        blocks.sort()
        for k, (index, name) in enumerate(blocks):
            if index != k:
                raise ValueError(f"{self.path}: input {input_name!r} stacks {blocks[0][1]!r} ...: "
                                 f"block {k} is {'missing' if index > k else 'given twice'}")
        arrays = [self[name] for _, name in blocks]
        for (_, name), a in zip(blocks, arrays):
            if a.shape != arrays[0].shape or a.dtype != arrays[0].dtype:
                raise ValueError(f"{self.path}: input {input_name!r} stacks {name!r} of "
                                 f"{a.dtype}{list(a.shape)} with {blocks[0][1]!r} of "
                                 f"{arrays[0].dtype}{list(arrays[0].shape)}")
        return np.stack(arrays)

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
