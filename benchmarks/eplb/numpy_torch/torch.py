"""The part of torch that DeepSeek's eplb.py calls, on numpy, for machines without torch.

compare_eplb.py puts this directory on sys.path only when `import torch` fails. Tensors wrap numpy
arrays; views (view, unflatten, flatten, expand) share memory as torch's do, and the in-place ops
(scatter_, item assignment, +=) write through them. Sorting is stable, so tied loads keep their
index order. Only what eplb.py needs is here: anything else raises AttributeError.
"""
from collections import namedtuple

import numpy as np

int64 = np.int64
int32 = np.int32
float32 = np.float32
float64 = np.float64
int = np.int64  # noqa: A001 (torch.int)
float = np.float32  # noqa: A001 (torch.float)

_Sorted = namedtuple("_Sorted", "values indices")


def _arr(x):
    return x.a if isinstance(x, Tensor) else x


class Tensor:
    def __init__(self, a):
        self.a = a if isinstance(a, np.ndarray) else np.asarray(a)

    # shape and conversion
    @property
    def shape(self):
        return self.a.shape

    @property
    def device(self):
        return "cpu"

    def size(self, dim=None):
        return self.a.shape if dim is None else self.a.shape[dim]

    def float(self):
        return Tensor(self.a.astype(np.float32))

    def cpu(self):
        return self

    def tolist(self):
        return self.a.tolist()

    def item(self):
        return self.a.item()

    def __index__(self):
        return operator_index(self.a)

    def __int__(self):
        return builtins_int(self.a)

    def __float__(self):
        return builtins_float(self.a)

    def __iter__(self):
        for row in self.a:
            yield Tensor(np.asarray(row))

    def __len__(self):
        return len(self.a)

    def __repr__(self):
        return "tensor(" + repr(self.a) + ")"

    # indexing (tensor indices become arrays)
    def _key(self, key):
        if isinstance(key, tuple):
            return tuple(_arr(k) for k in key)
        return _arr(key)

    def __getitem__(self, key):
        return Tensor(np.asarray(self.a[self._key(key)]))

    def __setitem__(self, key, value):
        self.a[self._key(key)] = _arr(value)

    # arithmetic and comparison
    def _op(self, other, f):
        return Tensor(np.asarray(f(self.a, _arr(other))))

    def __add__(self, o):
        return self._op(o, np.add)

    __radd__ = __add__

    def __iadd__(self, o):
        self.a = self.a + _arr(o)
        return self

    def __sub__(self, o):
        return self._op(o, np.subtract)

    def __mul__(self, o):
        return self._op(o, np.multiply)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._op(o, np.true_divide)

    def __lt__(self, o):
        return bool(self.a < _arr(o)) if self.a.ndim == 0 else self._op(o, np.less)

    def __le__(self, o):
        return bool(self.a <= _arr(o)) if self.a.ndim == 0 else self._op(o, np.less_equal)

    def __gt__(self, o):
        return bool(self.a > _arr(o)) if self.a.ndim == 0 else self._op(o, np.greater)

    def __ge__(self, o):
        return bool(self.a >= _arr(o)) if self.a.ndim == 0 else self._op(o, np.greater_equal)

    # reductions
    def sum(self, dim=None):
        return Tensor(np.asarray(self.a.sum() if dim is None else self.a.sum(axis=dim)))

    def max(self, dim=None):
        if dim is None:
            return Tensor(np.asarray(self.a.max()))
        return _Sorted(Tensor(self.a.max(axis=dim)), Tensor(self.a.argmax(axis=dim)))

    def sort(self, dim=-1, descending=False):
        keys = -self.a if descending else self.a
        idx = np.argsort(keys, axis=dim, kind="stable")
        return _Sorted(Tensor(np.take_along_axis(self.a, idx, axis=dim)), Tensor(idx.astype(np.int64)))

    # shape views
    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        v = self.a.view()
        v.shape = shape  # raises if a copy would be needed, as torch's view does
        return Tensor(v)

    def unflatten(self, dim, sizes):
        dim = dim % self.a.ndim
        return self.view(*(self.a.shape[:dim] + tuple(sizes) + self.a.shape[dim + 1:]))

    def flatten(self, start_dim=0, end_dim=-1):
        nd = self.a.ndim
        s, e = start_dim % nd, end_dim % nd
        return self.view(*(self.a.shape[:s] + (-1,) + self.a.shape[e + 1:]))

    def unsqueeze(self, dim):
        return Tensor(np.expand_dims(self.a, dim))

    def expand(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        shape = tuple(self.a.shape[i - len(shape) + self.a.ndim] if s == -1 else s
                      for i, s in enumerate(shape))
        return Tensor(np.broadcast_to(self.a, shape))

    def repeat(self, *reps):
        return Tensor(np.tile(self.a, reps))

    # gather and scatter along a dimension
    def gather(self, dim, index):
        return Tensor(np.take_along_axis(self.a, _arr(index), axis=dim))

    def scatter_(self, dim, index, src):
        np.put_along_axis(self.a, _arr(index), np.broadcast_to(_arr(src), _arr(index).shape), axis=dim)
        return self


import builtins as _builtins  # noqa: E402
import operator as _operator  # noqa: E402

builtins_int = _builtins.int
builtins_float = _builtins.float
operator_index = _operator.index


def _dtype(dtype, default):
    return default if dtype is None else dtype


def arange(*args, dtype=None, device=None):
    return Tensor(np.arange(*args).astype(_dtype(dtype, np.int64)))


def zeros(*shape, dtype=None, device=None):
    return Tensor(np.zeros(shape, dtype=_dtype(dtype, np.float32)))


def ones(*shape, dtype=None, device=None):
    return Tensor(np.ones(shape, dtype=_dtype(dtype, np.float32)))


def full(shape, fill_value, dtype=None, device=None):
    return Tensor(np.full(shape, fill_value, dtype=_dtype(dtype, np.float32)))


def zeros_like(t, dtype=None, device=None):
    return Tensor(np.zeros(t.shape, dtype=_dtype(dtype, t.a.dtype)))


def full_like(t, fill_value, dtype=None, device=None):
    return Tensor(np.full(t.shape, fill_value, dtype=_dtype(dtype, t.a.dtype)))


def empty_like(t, dtype=None, device=None):
    return Tensor(np.empty(t.shape, dtype=_dtype(dtype, t.a.dtype)))


def tensor(data, dtype=None, device=None):
    return Tensor(np.asarray(data, dtype=dtype))
