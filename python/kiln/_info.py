"""kiln.runtimes, kiln.config_keys and kiln.cache: the installation as data."""

from typing import NamedTuple

from . import _core


class RuntimeInfo(NamedTuple):
    """A runtime descriptor found (`kiln runtimes`)."""

    name: str
    descriptor: str
    backend: str
    device: str
    usable: bool
    note: str


class ConfigKey(NamedTuple):
    """A compiler knob, for Spec.compile(config=...) (README "--config knobs")."""

    name: str
    stage: str
    default: str
    help: str
    in_cache_key: bool


def runtimes():
    """Every runtime descriptor found, with whether it runs kernels here. "interp", the
    reference interpreter, is no descriptor but compiles too."""
    return [RuntimeInfo(*r) for r in _core.runtimes()]


def config_keys():
    """Every --config knob, sorted by name."""
    return [ConfigKey(*k) for k in _core.config_knobs()]


class Cache:
    """The compiled-code cache: $KILN_CACHE, else $XDG_CACHE_HOME/kiln or ~/.cache/kiln
    (KILN_CACHE=off: none). Kernels compiled with cache_dir= use that folder instead."""

    def stats(self, dir=""):
        """{"dir": folder, "entries": compiled programs, "bytes": their size}; dir "" when the
        cache is off."""
        d, entries, size = _core.cache_info(str(dir))
        return {"dir": d, "entries": entries, "bytes": size}

    def clear(self, dir=""):
        """Deletes every entry; returns how many."""
        return _core.clear_cache(str(dir))

    def __repr__(self):
        s = self.stats()
        return f"kiln.cache({s['dir'] or 'off'}: {s['entries']} entries, {s['bytes']} bytes)"
