"""A safetensors file written from numpy arrays, without torch.

The tiny presets are written on first use, often by `inspect`, whose answer must not wait for
the torch import (issue 26). numpy has no bfloat16, so float32 arrays stored as BF16 are
rounded here to the nearest even bfloat16, as torch's `.to(torch.bfloat16)` rounds; float16 is
numpy's own cast, which rounds the same way. The bytes of every tensor are those torch wrote.

The layout is the format's (github.com/huggingface/safetensors, "Format"): an 8-byte
little-endian header length, the JSON header (each tensor's dtype, shape and byte range, plus
`__metadata__`) padded with spaces to a multiple of 8, then the tensors' bytes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# numpy dtype (its `.str`, little-endian as numpy spells it on x86/ARM) → the safetensors dtype
# name, for the dtypes stored as they are. Keyed by string so that importing this module does
# not import numpy: triage reaches it through the presets, and numpy cost it 0.1 s (issue 29).
_STORED = {"<f4": "F32", "<f2": "F16", "<i8": "I64", "<i4": "I32", "|b1": "BOOL"}
# the float storage a config's dtype names (anything else stays float32)
_FLOAT_STORAGE = {"bfloat16": "BF16", "float16": "F16"}


def bfloat16_bits(array: np.ndarray) -> np.ndarray:
    """float32 values as bfloat16 bit patterns (uint16), rounded to nearest even; a NaN
    becomes 0xFFFF, as torch's CPU conversion gives (the presets hold none)."""
    import numpy as np

    values = np.ascontiguousarray(array, dtype=np.float32)
    bits = values.view(np.uint32)
    out = ((bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
    out[np.isnan(values)] = 0xFFFF
    return out


def _stored(array: np.ndarray, float_dtype: str) -> tuple[str, bytes]:
    """The safetensors dtype and little-endian bytes of one tensor."""
    import numpy as np

    array = np.ascontiguousarray(array)
    if array.dtype.kind == "f":
        storage = _FLOAT_STORAGE.get(float_dtype, "F32")
        if storage == "BF16":
            return storage, bfloat16_bits(array).astype("<u2").tobytes()
        dtype = np.float16 if storage == "F16" else np.float32
        return storage, array.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    if array.dtype.str not in _STORED:
        raise TypeError(f"no safetensors dtype for {array.dtype}")
    return _STORED[array.dtype.str], array.astype(array.dtype.newbyteorder("<")).tobytes()


def save_safetensors(
    tensors: dict[str, np.ndarray],
    path: Path,
    float_dtype: str,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write `tensors` to `path`: floating arrays stored as `float_dtype` (bfloat16, float16,
    else float32), integer and boolean arrays as they are."""
    import numpy as np

    header: dict[str, object] = {"__metadata__": dict(metadata or {"format": "pt"})}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        dtype, data = _stored(tensors[name], float_dtype)
        shape = list(np.shape(tensors[name]))
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)
