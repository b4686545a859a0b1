"""Arrow arrays to numpy and back, read and built from their buffers.

pyarrow imports pandas (about a tenth of a second) the first time it turns
Python or numpy values into Arrow, or an array into numpy, to see whether it
was handed a pandas object. The loaders only ever hold plain arrays, so they
convert through these functions, and ``sharp-cer match`` runs without pandas.

>>> import numpy as np
>>> arr = from_numpy(np.array([3, 0, 5]), mask=np.array([False, True, False]))
>>> arr.to_pylist(), to_numpy(arr, -1).tolist(), nulls(arr).tolist()
([3, None, 5], [3, -1, 5], [False, True, False])
>>> strings(["BUY", None, "SELL"]).to_pylist()
['BUY', None, 'SELL']
>>> to_numpy(from_numpy(np.array([True, False, True])).slice(1), False).tolist()
[False, True]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

_ARROW = {
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.float64): pa.float64(),
    np.dtype(np.bool_): pa.bool_(),
}
_NUMPY: dict[Any, np.dtype[Any]] = {
    pa.int8(): np.dtype(np.int8),
    pa.int16(): np.dtype(np.int16),
    pa.int32(): np.dtype(np.int32),
    pa.int64(): np.dtype(np.int64),
    pa.uint8(): np.dtype(np.uint8),
    pa.uint16(): np.dtype(np.uint16),
    pa.uint32(): np.dtype(np.uint32),
    pa.uint64(): np.dtype(np.uint64),
    pa.float32(): np.dtype(np.float32),
    pa.float64(): np.dtype(np.float64),
}


def _dtype(kind: Any) -> np.dtype[Any]:
    return np.dtype(np.bool_) if pa.types.is_boolean(kind) else _NUMPY[kind]


def _bits(buffer: Any, offset: int, n: int) -> npt.NDArray[np.bool_]:
    """Bits ``offset`` to ``offset + n`` of an Arrow bitmap (least significant first)."""
    first = offset // 8
    raw = np.frombuffer(buffer, dtype=np.uint8, count=(offset + n + 7) // 8 - first, offset=first)
    return np.unpackbits(raw, bitorder="little")[offset % 8 : offset % 8 + n].view(np.bool_)


def nulls(arr: Any) -> npt.NDArray[np.bool_]:
    """Where a (chunked) array is null, as a writable numpy mask."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count == 0 or len(arr) == 0:
        return np.zeros(len(arr), dtype=np.bool_)
    if arr.null_count == len(arr) or arr.buffers()[0] is None:  # a null array has no bitmap
        return np.ones(len(arr), dtype=np.bool_)
    return ~_bits(arr.buffers()[0], arr.offset, len(arr))


def to_numpy(arr: Any, fill: Any) -> npt.NDArray[Any]:
    """A (chunked) boolean or numeric array's values as numpy, ``fill`` where
    null: a new array for booleans and where there are nulls, else a
    read-only view of the array's buffer."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if pa.types.is_null(arr.type):
        return np.full(n, fill)
    data = arr.buffers()[1]
    if data is None:  # an empty array may have no buffers
        return np.full(n, fill, dtype=_dtype(arr.type))
    if pa.types.is_boolean(arr.type):
        result: npt.NDArray[Any] = _bits(data, arr.offset, n).copy()
    else:
        dtype = _dtype(arr.type)
        result = np.frombuffer(data, dtype=dtype, count=n, offset=arr.offset * dtype.itemsize)
    return np.where(nulls(arr), fill, result) if arr.null_count else result


def from_numpy(array: npt.NDArray[Any], mask: npt.NDArray[np.bool_] | None = None) -> Any:
    """A numpy array of int64, int32, float64 or bool as an Arrow array,
    null where ``mask`` is True."""
    array = np.ascontiguousarray(array)
    kind = _ARROW[array.dtype]
    data = np.packbits(array, bitorder="little") if array.dtype == np.bool_ else array
    validity = None
    if mask is not None and mask.any():
        validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    return pa.Array.from_buffers(kind, len(array), [validity, pa.py_buffer(data)])


def strings(texts: Sequence[str | None]) -> Any:
    """Python strings (None: null) as an Arrow string array."""
    encoded = [b"" if t is None else t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(np.array([len(b) for b in encoded], dtype=np.int64))
    if offsets[-1] > np.iinfo(np.int32).max:  # the offsets of a string array are int32
        raise ValueError("strings: more than 2 GiB of text in one array")
    missing = np.array([t is None for t in texts], dtype=np.bool_)
    validity = pa.py_buffer(np.packbits(~missing, bitorder="little")) if missing.any() else None
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
    )


#: a null string, and the empty string, for compute functions (a Python value
#: given to one goes through pyarrow's conversion)
NULL_STRING = pa.nulls(1, pa.string())[0]
EMPTY_STRING = strings([""])[0]
