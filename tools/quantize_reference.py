#!/usr/bin/python3
"""GGML's reference quantization (quantize_row_q8_0_ref, quantize_row_q4_0_ref, bf16 rounding)
in numpy, independent of tessera's C++ (core/weight_formats.hpp), and the test vectors it writes:

  /usr/bin/python3 tools/quantize_reference.py tests/data/quantization   (needs python3-numpy)

writes inputs.f32 (rows of 256 float32: normal, outliers, zeros, ties, tiny, large, clamped),
q8_0.bin, q4_0.bin (GGUF block layout: f16 d, then the quants) and bf16.bin, all little-endian,
and the weights each holds (dequantized: d widened to float32 times the quant) as *.dequant.f32.
"""
import pathlib
import sys

import numpy as np

ROW = 256


def round_half_away(v):
    # C's roundf: halves away from zero. In float64, where v + 0.5 is exact for float32 v.
    v = v.astype(np.float64)
    return np.trunc(v + np.copysign(0.5, v))


def q8_0(x):
    out = bytearray()
    for block in x.reshape(-1, 32):
        amax = np.float32(np.max(np.abs(block)))
        d = np.float32(amax / np.float32(127))
        inv = np.float32(1) / d if d != 0 else np.float32(0)
        q = round_half_away((block * inv).astype(np.float32)).astype(np.int8)
        out += np.float16(d).tobytes() + q.tobytes()
    return bytes(out)


def q4_0(x):
    out = bytearray()
    for block in x.reshape(-1, 32):
        m = block[int(np.argmax(np.abs(block)))]  # the first of largest magnitude
        d = np.float32(m / np.float32(-8))
        inv = np.float32(1) / d if d != 0 else np.float32(0)
        shifted = ((block * inv).astype(np.float32) + np.float32(8.5)).astype(np.float32)
        q = np.minimum(15, np.trunc(shifted.astype(np.float64)).astype(np.int64))
        packed = (q[:16] | (q[16:] << 4)).astype(np.uint8)
        out += np.float16(d).tobytes() + packed.tobytes()
    return bytes(out)


def dequantize(blocks, kind):
    size = 34 if kind == "q8_0" else 18
    out = []
    for i in range(0, len(blocks), size):
        d = np.frombuffer(blocks[i:i + 2], dtype="<f2")[0].astype(np.float32)
        if kind == "q8_0":
            q = np.frombuffer(blocks[i + 2:i + 34], dtype=np.int8).astype(np.float32)
        else:
            p = np.frombuffer(blocks[i + 2:i + 18], dtype=np.uint8).astype(np.int32)
            q = np.concatenate([(p & 15) - 8, (p >> 4) - 8]).astype(np.float32)
        out.append((q * d).astype(np.float32))
    return np.concatenate(out)


def dequantize_q6_k(blocks):
    """GGUF's Q6_K (read only: llama-quantize keeps GPT-2's tied embedding in it): super-blocks
    of 256 weights in 210 bytes, ql[128] (low 4 bits), qh[64] (high 2 bits), 16 int8 scales,
    an f16 d; weight = d * scale * (q - 32), in float32 in that order."""
    out = []
    for i in range(0, len(blocks), 210):
        b = blocks[i:i + 210]
        ql = np.frombuffer(b[:128], np.uint8).astype(np.int32)
        qh = np.frombuffer(b[128:192], np.uint8).astype(np.int32)
        sc = np.frombuffer(b[192:208], np.int8).astype(np.float32)
        d = np.frombuffer(b[208:210], "<f2")[0].astype(np.float32)
        y = np.zeros(256, np.float32)
        for half in range(2):
            l_ = ql[64 * half:64 * half + 64]
            h_ = qh[32 * half:32 * half + 32]
            s_ = sc[8 * half:8 * half + 8]
            for l in range(32):
                q = [((l_[l] & 15) | ((h_[l] & 3) << 4)) - 32, ((l_[l + 32] & 15) | (((h_[l] >> 2) & 3) << 4)) - 32,
                     ((l_[l] >> 4) | (((h_[l] >> 4) & 3) << 4)) - 32, ((l_[l + 32] >> 4) | (((h_[l] >> 6) & 3) << 4)) - 32]
                for j in range(4):
                    y[128 * half + l + 32 * j] = np.float32(d * s_[l // 16 + 2 * j]) * np.float32(q[j])
        out.append(y)
    return np.concatenate(out)


def q6_k(x):
    """A valid Q6_K encoding of x (not ggml's: its scale search is not needed to make test
    files): per 16 weights a scale s = max|x| / 31.5, the super-block's d = max|s| / 127, the
    int8 scales round(s / d), quants clamp(round(x / (d * scale)), -32, 31) + 32."""
    out = bytearray()
    for block in x.reshape(-1, 256).astype(np.float32):
        groups = block.reshape(16, 16)
        s = np.abs(groups).max(1) / np.float32(31.5)
        d = np.float32(np.abs(s).max() / 127) if s.max() > 0 else np.float32(0)
        d16 = np.float16(d)
        sc = np.clip(np.round(s / np.float32(d16)), -128, 127).astype(np.int8) if d16 != 0 else np.zeros(16, np.int8)
        step = np.float32(d16) * sc.astype(np.float32)
        q = np.where(step[:, None] != 0, np.round(groups / np.where(step == 0, 1, step)[:, None]), 0)
        q = (np.clip(q, -32, 31) + 32).astype(np.int32).reshape(256)
        ql, qh = np.zeros(128, np.int32), np.zeros(64, np.int32)
        for half in range(2):
            for l in range(32):
                v = [q[128 * half + l + 32 * j] for j in range(4)]
                ql[64 * half + l] = (v[0] & 15) | ((v[2] & 15) << 4)
                ql[64 * half + l + 32] = (v[1] & 15) | ((v[3] & 15) << 4)
                qh[32 * half + l] = (v[0] >> 4) | ((v[1] >> 4) << 2) | ((v[2] >> 4) << 4) | ((v[3] >> 4) << 6)
        out += ql.astype(np.uint8).tobytes() + qh.astype(np.uint8).tobytes() + sc.tobytes() + d16.astype("<f2").tobytes()
    return bytes(out)


def bf16(x):
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # nearest, ties to even (no NaN in the inputs)
    return rounded.astype(np.uint16).tobytes()


def inputs():
    rng = np.random.default_rng(2026)
    rows = [
        rng.standard_normal(ROW),
        rng.standard_normal(ROW) * 0.02,  # GPT-2's weight scale
        np.where(rng.random(ROW) < 0.02, 30.0, 1.0) * rng.standard_normal(ROW),  # outliers
        np.zeros(ROW),
        np.repeat(np.arange(-4, 4) * 0.5 + 0.25, ROW // 8),  # blocks of equal values
        (np.arange(ROW) % 32 - 16) * (127 / 16 / 2),  # quotients at exact halves
        rng.standard_normal(ROW) * 1e-6,  # scales in f16's subnormal range
        rng.standard_normal(ROW) * 1e3,
        -np.abs(rng.standard_normal(ROW)),  # every block's extreme negative
        np.abs(rng.standard_normal(ROW)),
        # Q8_0 ties: 127 first makes d = 1, so k + 0.5 lies exactly between two quants (round
        # half away from zero, not to even)
        np.tile(np.concatenate([[127.0], np.arange(31) - 15 + 0.5]), ROW // 32),
        # Q4_0: -8 first makes d = 1; quotients land on every quant and on the clamp at 15
        np.tile(np.concatenate([[-8.0], np.arange(31) * 0.5 - 7.25]), ROW // 32),
    ]
    return np.concatenate(rows).astype(np.float32)


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    x = inputs()
    (out / "inputs.f32").write_bytes(x.astype("<f4").tobytes())
    for kind, quantize in (("q8_0", q8_0), ("q4_0", q4_0)):
        blocks = quantize(x)
        (out / f"{kind}.bin").write_bytes(blocks)
        (out / f"{kind}.dequant.f32").write_bytes(dequantize(blocks, kind).astype("<f4").tobytes())
    (out / "bf16.bin").write_bytes(bf16(x))
    print(f"wrote {x.size // ROW} rows of {ROW} weights to {out}")


if __name__ == "__main__":
    main()
