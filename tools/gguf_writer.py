#!/usr/bin/python3
"""A small GGUF v3 writer (ggml's docs/gguf.md), independent of tessera's C++ reader, and the
test file it writes:

  /usr/bin/python3 tools/gguf_writer.py tests/data/gguf/sample.gguf   (needs python3-numpy)

sample.gguf holds metadata of every value type (UTF-8 strings, arrays of strings and integers,
an array of arrays) and tensors of each type (F32, F16, BF16, Q8_0 made by
tools/quantize_reference.py, Q6_K of random bytes with the floats numpy reads from them)
with the default alignment of 32; tests/test_gguf.cpp checks what tessera reads from it.
"""
import pathlib
import struct
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import quantize_reference  # noqa: E402

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q",
          I64: "<q", F64: "<d"}
GGML = {"F32": 0, "F16": 1, "Q4_0": 2, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "BF16": 30}


def string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def value(kind, v):
    if kind == STRING:
        return string(v)
    if kind == ARRAY:
        element, items = v
        return struct.pack("<IQ", element, len(items)) + b"".join(value(element, x) for x in items)
    return struct.pack(SCALAR[kind], v)


def write_gguf(path, metadata, tensors, alignment=32):
    """metadata: [(key, type, value)]; tensors: [(name, ggml type name, ne (innermost first), bytes)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, kind, v in metadata:
        out += string(key) + struct.pack("<I", kind) + value(kind, v)
    offset, data = 0, bytearray()
    for name, kind, ne, raw in tensors:
        out += string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        out += struct.pack("<IQ", GGML[kind], offset)
        data += raw + b"\0" * (-len(raw) % alignment)
        offset = len(data)
    out += b"\0" * (-len(out) % alignment)
    pathlib.Path(path).write_bytes(bytes(out + data))


def main():
    path = pathlib.Path(sys.argv[1])
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = [
        ("general.architecture", STRING, "gpt2"),
        ("general.name", STRING, "sample ✓ 北京"),
        ("test.u8", U8, 200), ("test.i8", I8, -100), ("test.u16", U16, 60000), ("test.i16", I16, -30000),
        ("test.u32", U32, 4000000000), ("test.i32", I32, -2000000000), ("test.f32", F32, 0.25),
        ("test.bool", BOOL, True), ("test.u64", U64, 2 ** 63 + 5), ("test.i64", I64, -(2 ** 62)),
        ("test.f64", F64, -1.5e300),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, ["a", "Ġb", "<|endoftext|>"])),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [1, 1, 3])),
        ("test.nested", ARRAY, (ARRAY, [(U8, [1, 2]), (U8, [])])),
    ]
    f32 = np.arange(12, dtype="<f4") * 0.5 - 2
    f16 = np.array([1, -2, 0.5, 65504], dtype="<f2")
    bf16 = quantize_reference.bf16(np.array([1, -2, 3.14159, 1e30, -0.0], dtype=np.float32))
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    # Q6_K: two super-blocks of random bytes with finite f16 scales (any bytes are valid
    # quants), and the floats numpy reads from them beside them.
    rng = np.random.default_rng(6)
    q6 = bytearray(rng.integers(0, 256, 420, dtype=np.uint8).tobytes())
    for i, d in enumerate([0.0123, -3.5e-5]):
        q6[210 * i + 208:210 * i + 210] = np.float16(d).tobytes()
    q6_floats = quantize_reference.dequantize_q6_k(bytes(q6))
    tensors = [
        ("f32", "F32", [4, 3], f32.tobytes()),
        ("q6_k", "Q6_K", [256, 2], bytes(q6)),
        ("q6_k.expected", "F32", [256, 2], q6_floats.astype("<f4").tobytes()),
        ("f16", "F16", [4], f16.tobytes()),
        ("bf16", "BF16", [5], bf16),
        ("q8_0", "Q8_0", [32, 2], quantize_reference.q8_0(x)),
    ]
    write_gguf(path, metadata, tensors)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
