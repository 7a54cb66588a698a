#!/usr/bin/python3
"""GGML's reference quantization (quantize_row_q8_0_ref, quantize_row_q4_0_ref, quantize_row_q5_0_ref,
quantize_row_q5_1_ref, quantize_row_q6_K_ref, quantize_row_q4_K_ref, quantize_row_q5_K_ref, bf16 rounding) in
numpy, independent of tessera's C++
(core/weight_formats.hpp), and the test vectors it writes:

  /usr/bin/python3 tools/quantize_reference.py tests/data/quantization   (needs python3-numpy)

writes inputs.f32 (rows of 256 float32: normal, outliers, zeros, ties, tiny, large, clamped),
q8_0.bin, q4_0.bin (GGUF block layout: f16 d, then the quants), q5_0.bin, q5_1.bin, q6_k.bin, q4_k.bin, q5_k.bin and
bf16.bin, all little-endian,
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


def symmetric_quants(block, half):
    """Q4_0 (half 8) / Q5_0 (half 16): m = the value of largest magnitude (the first such),
    d = m / -half, q = min(2 half - 1, trunc(x / d + half + 0.5)). Returns d, q."""
    m = block[int(np.argmax(np.abs(block)))]
    d = np.float32(m / np.float32(-half))
    inv = np.float32(1) / d if d != 0 else np.float32(0)
    shifted = ((block * inv).astype(np.float32) + np.float32(half + 0.5)).astype(np.float32)
    return d, np.minimum(2 * half - 1, np.trunc(shifted.astype(np.float64)).astype(np.int64))


def q4_0(x):
    out = bytearray()
    for block in x.reshape(-1, 32):
        d, q = symmetric_quants(block, 8)
        packed = (q[:16] | (q[16:] << 4)).astype(np.uint8)
        out += np.float16(d).tobytes() + packed.tobytes()
    return bytes(out)


def five_bits(q):
    """Q5_0 / Q5_1's 32 quants: qh (bit j: the fifth bit of quant j, little-endian), then qs
    (quant j's low four bits in the low nibble of byte j, quant j + 16's in the high one)."""
    qh = int(sum(int((v >> 4) & 1) << j for j, v in enumerate(q)))
    qs = ((q[:16] & 15) | ((q[16:] & 15) << 4)).astype(np.uint8)
    return qh.to_bytes(4, "little") + qs.tobytes()


def q5_0(x):
    out = bytearray()
    for block in x.reshape(-1, 32):
        d, q = symmetric_quants(block, 16)
        out += np.float16(d).tobytes() + five_bits(q)
    return bytes(out)


def q5_1(x):
    out = bytearray()
    for block in x.reshape(-1, 32):
        lo, hi = np.float32(block.min()), np.float32(block.max())
        d = np.float32((hi - lo) / np.float32(31))
        inv = np.float32(1) / d if d != 0 else np.float32(0)
        shifted = (((block - lo).astype(np.float32) * inv).astype(np.float32) + np.float32(0.5)).astype(np.float32)
        q = np.trunc(shifted.astype(np.float64)).astype(np.int64) & 255  # C's (uint8_t) of the float
        out += np.float16(d).tobytes() + np.float16(lo).tobytes() + five_bits(q)
    return bytes(out)


def dequantize_q5(blocks, kind):
    """GGML's dequantize_row_q5_0 (d * (q - 16)) / q5_1 (d * q + m)."""
    size = 22 if kind == "q5_0" else 24
    out = []
    for i in range(0, len(blocks), size):
        b = blocks[i:i + size]
        d = np.frombuffer(b[0:2], dtype="<f2")[0].astype(np.float32)
        at = 2 if kind == "q5_0" else 4
        qh = int.from_bytes(b[at:at + 4], "little")
        p = np.frombuffer(b[at + 4:at + 20], dtype=np.uint8).astype(np.int64)
        high = np.array([(qh >> j) & 1 for j in range(32)], dtype=np.int64) << 4
        q = np.concatenate([p & 15, p >> 4]) | high
        if kind == "q5_0":
            out.append(((q - 16).astype(np.float32) * d).astype(np.float32))
        else:
            m = np.frombuffer(b[2:4], dtype="<f2")[0].astype(np.float32)
            out.append(((q.astype(np.float32) * d).astype(np.float32) + m).astype(np.float32))
    return np.concatenate(out)


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
    """GGUF's Q6_K (llama-quantize keeps GPT-2's tied embedding in it in Q4_0 files): super-blocks
    of 256 weights in 210 bytes, ql[128] (low 4 bits), qh[64] (high 2 bits), 16 int8 scales,
    an f16 d; weight = d * scale * (q - 32), in float32 in that order."""
    b = np.frombuffer(blocks, np.uint8).reshape(-1, 210)
    ql = b[:, :128].astype(np.int32).reshape(-1, 2, 64)
    qh = b[:, 128:192].astype(np.int32).reshape(-1, 2, 32)
    sc = b[:, 192:208].view(np.int8).astype(np.float32).reshape(-1, 2, 8)
    d = b[:, 208:210].copy().view("<f2").astype(np.float32).reshape(-1, 1, 1)
    low, high = ql[:, :, :32], ql[:, :, 32:]
    q = np.stack([(low & 15) | ((qh & 3) << 4), (high & 15) | (((qh >> 2) & 3) << 4),
                  (low >> 4) | (((qh >> 4) & 3) << 4), (high >> 4) | (((qh >> 6) & 3) << 4)], axis=2) - 32  # (B, 2, 4, 32)
    # weight l + 32 j of a half uses scale l // 16 + 2 j
    scale = np.stack([sc[:, :, 2 * j:2 * j + 2] for j in range(4)], axis=2)  # (B, 2, 4, 2)
    scale = np.repeat(scale, 16, axis=3)  # (B, 2, 4, 32)
    step = (d[:, :, :, None] * scale).astype(np.float32)
    return (step * q.astype(np.float32)).astype(np.float32).reshape(-1)


def nearest(v):
    # GGML's nearest_int of a float32: to the nearest integer, ties to even.
    return np.rint(v.astype(np.float32)).astype(np.int64)


def make_qx_quants_16(groups):
    """GGML's make_qx_quants(16, 32, x, L, rmse_type=1, NULL) for every row of groups (G, 16):
    the scale with the least x^2-weighted squared error among 1/iscale for iscale = -(32 +
    0.1 i) / max, i = 0, -9..9 (max: the first value of largest magnitude), and its quants
    L = clamp(round(iscale x), -32, 31) + 32. Float32 throughout; the sums run left to right
    (np.cumsum), each product rounded as C rounds it."""
    f32 = np.float32
    groups = groups.astype(f32)
    rows = np.arange(groups.shape[0])
    absx = np.abs(groups)
    first = np.argmax(absx, axis=1)
    amax, mx = absx[rows, first], groups[rows, first]
    zero = amax < f32(1e-15)
    mx = np.where(zero, f32(1), mx).astype(f32)
    w = (groups * groups).astype(f32)

    def trial(iscale):
        l = np.clip(nearest((iscale[:, None] * groups).astype(f32)), -32, 31)
        lf = l.astype(f32)
        lx = (((w * groups).astype(f32)) * lf).astype(f32)
        l2 = (((w * lf).astype(f32)) * lf).astype(f32)
        return l, np.cumsum(lx, axis=1, dtype=f32)[:, -1], np.cumsum(l2, axis=1, dtype=f32)[:, -1]

    l, sumlx, suml2 = trial((f32(-32) / mx).astype(f32))
    L = l + 32
    divisor = np.where(suml2 != 0, suml2, f32(1)).astype(f32)
    scale = np.where(suml2 != 0, (sumlx / divisor).astype(f32), f32(0)).astype(f32)
    best = (scale * sumlx).astype(f32)
    for i in range(-9, 10):
        if i == 0:
            continue
        iscale = (-(f32(32) + f32(0.1) * f32(i)) / mx).astype(f32)
        l, sumlx, suml2 = trial(iscale)
        better = (suml2 > 0) & ((sumlx * sumlx).astype(f32) > (best * suml2).astype(f32))
        L = np.where(better[:, None], l + 32, L)
        divisor = np.where(suml2 != 0, suml2, f32(1)).astype(f32)
        scale = np.where(better, (sumlx / divisor).astype(f32), scale).astype(f32)
        best = np.where(better, (scale * sumlx).astype(f32), best).astype(f32)
    return np.where(zero, f32(0), scale).astype(f32), np.where(zero[:, None], 0, L)


def q6_k(x):
    """GGML's quantize_row_q6_K_ref (what llama-quantize writes without an importance matrix):
    super-blocks of 256 weights in 210 bytes, ql[128] (low 4 bits), qh[64] (high 2 bits), 16
    int8 scales, an f16 d. Each group of 16 gets make_qx_quants' scale; the 16 scales are
    quantized against d = f16(max_scale / -128) (max_scale: the first of largest magnitude) as
    min(127, round(-128 scale / max_scale)); each weight is then rounded against its group's
    d * scale (a group whose d * scale is 0 keeps make_qx_quants' quants)."""
    f32 = np.float32
    blocks = x.reshape(-1, 256).astype(f32)
    group_scales, group_quants = make_qx_quants_16(blocks.reshape(-1, 16))
    group_scales = group_scales.reshape(-1, 16)
    group_quants = group_quants.reshape(-1, 256)
    out = bytearray()
    for i, block in enumerate(blocks):
        s = group_scales[i]
        j = int(np.argmax(np.abs(s)))
        if np.abs(s[j]) < f32(1e-15):
            out += bytes(210)
            continue
        iscale = f32(f32(-128) / s[j])
        d16 = np.float16(f32(f32(1) / iscale))
        sc = np.minimum(127, nearest((iscale * s).astype(f32))).astype(np.int8)
        q = group_quants[i].copy()
        step = (f32(d16) * sc.astype(f32)).astype(f32)
        for g in range(16):
            if step[g] != 0:
                q[16 * g:16 * g + 16] = np.clip(nearest((block[16 * g:16 * g + 16] / step[g]).astype(f32)), -32, 31) + 32
        ql, qh = np.zeros(128, np.int64), np.zeros(64, np.int64)
        for half in range(2):
            for l in range(32):
                v = [q[128 * half + l + 32 * j] for j in range(4)]
                ql[64 * half + l] = (v[0] & 15) | ((v[2] & 15) << 4)
                ql[64 * half + l + 32] = (v[1] & 15) | ((v[3] & 15) << 4)
                qh[32 * half + l] = (v[0] >> 4) | ((v[1] >> 4) << 2) | ((v[2] >> 4) << 4) | ((v[3] >> 4) << 6)
        out += ql.astype(np.uint8).tobytes() + qh.astype(np.uint8).tobytes() + sc.tobytes() + d16.astype("<f2").tobytes()
    return bytes(out)


F32 = np.float32


def fit_groups(x, w, nmax, rmin, rdelta, nstep):
    """GGML's make_qkx2_quants(32, nmax, x, w, L, &the_min, Laux, rmin, rdelta, nstep, false)
    for every row of x and w (G, 32): quants L in [0, nmax] for x ~ scale * L + min with min =
    min(x, 0) at first, then the weighted least-squares (scale, min) of each trial iscale (rmin
    + rdelta i + nmax) / (max - min), i = 0..nstep (min: the best fit's so far), kept where its
    weighted squared error is smaller. Returns (scale, L, -min) per row. Float32 throughout,
    each product rounded before it is added, sums left to right."""
    x, w = x.astype(F32), w.astype(F32)

    def row_sums(v):
        with np.errstate(all="ignore"):
            return np.cumsum(v.astype(F32), axis=1, dtype=F32)[:, -1]

    lo = np.minimum(x.min(axis=1), F32(0)).astype(F32)
    hi = x.max(axis=1).astype(F32)
    flat = hi == lo  # all equal (after min(x, 0)): scale 0, quants 0
    sum_w, sum_x = row_sums(w), row_sums(w * x)

    def quants(iscale):
        shifted = (x - lo[:, None]).astype(F32)
        return np.clip(np.rint((iscale[:, None] * shifted).astype(F32)), 0, nmax).astype(np.int64)

    def errors(scale, offset, l):
        diff = ((scale[:, None] * l.astype(F32)).astype(F32) + offset[:, None]).astype(F32) - x
        return row_sums(w * (diff * diff).astype(F32))

    with np.errstate(all="ignore"):  # (the flat rows divide by zero; their results are replaced)
        iscale = (F32(nmax) / (hi - lo).astype(F32)).astype(F32)
        scale = (F32(1) / iscale).astype(F32)
        L = quants(iscale)
        best = errors(scale, lo, L)
        for i in range(nstep + 1):
            iscale = (F32(F32(F32(rmin) + F32(F32(rdelta) * F32(i))) + F32(nmax)) / (hi - lo).astype(F32)).astype(F32)
            l = quants(iscale)
            lf = l.astype(F32)
            wl = (w * lf).astype(F32)
            sum_l, sum_l2, sum_xl = row_sums(wl), row_sums(wl * lf), row_sums(wl * x)
            D = ((sum_w * sum_l2).astype(F32) - (sum_l * sum_l).astype(F32)).astype(F32)
            this_scale = (((sum_w * sum_xl).astype(F32) - (sum_x * sum_l).astype(F32)).astype(F32) / D).astype(F32)
            this_min = (((sum_l2 * sum_x).astype(F32) - (sum_l * sum_xl).astype(F32)).astype(F32) / D).astype(F32)
            positive = this_min > 0
            this_scale = np.where(positive, (sum_xl / sum_l2).astype(F32), this_scale).astype(F32)
            this_min = np.where(positive, F32(0), this_min).astype(F32)
            better = (D > 0) & ~flat & (errors(this_scale, this_min, l) < best)
            best = np.where(better, errors(this_scale, this_min, l), best).astype(F32)
            L = np.where(better[:, None], l, L)
            scale = np.where(better, this_scale, scale).astype(F32)
            lo = np.where(better, this_min, lo).astype(F32)
    return np.where(flat, F32(0), scale).astype(F32), np.where(flat[:, None], 0, L), (-lo).astype(F32)


def k_quant(x, nmax, rmin, rdelta, nstep):
    """GGML's quantize_row_q4_K_ref (nmax 15) / quantize_row_q5_K_ref (nmax 31) for super-blocks
    x (B, 256): the 8 groups' fits (weights: the group's RMS + |x|), their scales and mins as
    6-bit numbers against f16 d = max scale / 63 and dmin = max min / 63, packed into 12 bytes,
    and every weight requantized against its group's step. Returns d, dmin (B), the scale bytes
    (B, 12) and the quants (B, 256)."""
    blocks = x.reshape(-1, 256).astype(F32)
    groups = blocks.reshape(-1, 32)
    sum_x2 = np.cumsum((groups * groups).astype(F32), axis=1, dtype=F32)[:, -1]
    av = np.sqrt((sum_x2 / F32(32)).astype(F32)).astype(F32)
    scales, L, mins = fit_groups(groups, (av[:, None] + np.abs(groups)).astype(F32), nmax, rmin, rdelta, nstep)
    scales, mins, L = scales.reshape(-1, 8), mins.reshape(-1, 8), L.reshape(-1, 256)
    max_scale = np.maximum(scales.max(axis=1), F32(0)).astype(F32)
    max_min = np.maximum(mins.max(axis=1), F32(0)).astype(F32)
    with np.errstate(divide="ignore"):
        inv_scale = np.where(max_scale > 0, F32(63) / max_scale, F32(0)).astype(F32)
        inv_min = np.where(max_min > 0, F32(63) / max_min, F32(0)).astype(F32)
    ls = np.minimum(63, np.rint((inv_scale[:, None] * scales).astype(F32)).astype(np.int64) & 255)
    lm = np.minimum(63, np.rint((inv_min[:, None] * mins).astype(F32)).astype(np.int64) & 255)
    packed = np.zeros((len(blocks), 12), np.int64)
    packed[:, 0:4], packed[:, 4:8] = ls[:, :4], lm[:, :4]
    packed[:, 8:12] = (ls[:, 4:] & 15) | ((lm[:, 4:] & 15) << 4)
    packed[:, 0:4] |= (ls[:, 4:] >> 4) << 6
    packed[:, 4:8] |= (lm[:, 4:] >> 4) << 6
    d = (max_scale / F32(63)).astype(F32).astype(np.float16)
    dmin = (max_min / F32(63)).astype(F32).astype(np.float16)
    step = (d.astype(F32)[:, None] * ls.astype(F32)).astype(F32)
    offset = (dmin.astype(F32)[:, None] * lm.astype(F32)).astype(F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        shifted = (blocks.reshape(-1, 8, 32) + offset[:, :, None]).astype(F32)
        requantized = np.clip(np.rint((shifted / step[:, :, None]).astype(F32)), 0, nmax)
    q = np.where((step != 0)[:, :, None], requantized, L.reshape(-1, 8, 32)).astype(np.int64).reshape(-1, 256)
    return d, dmin, packed.astype(np.uint8), q


def q4_k(x):
    """Q4_K blocks of 144 bytes: f16 d, f16 dmin, 12 scale bytes, then 128 bytes whose low
    nibbles hold groups 0, 2, 4, 6 and high nibbles groups 1, 3, 5, 7 (32 bytes per pair)."""
    d, dmin, packed, q = k_quant(x, 15, -1.0, 0.1, 20)
    pairs = q.reshape(-1, 4, 2, 32)
    qs = (pairs[:, :, 0] | (pairs[:, :, 1] << 4)).astype(np.uint8).reshape(-1, 128)
    return b"".join(d[i].astype("<f2").tobytes() + dmin[i].astype("<f2").tobytes() + packed[i].tobytes() + qs[i].tobytes()
                    for i in range(len(d)))


def q5_k(x):
    """Q5_K blocks of 176 bytes: f16 d, f16 dmin, 12 scale bytes, 32 bytes of fifth bits (bit
    g of byte l: weight l of group g), then the low nibbles as Q4_K's."""
    d, dmin, packed, q = k_quant(x, 31, -0.5, 0.1, 15)
    pairs = q.reshape(-1, 4, 2, 32)
    qs = ((pairs[:, :, 0] & 15) | ((pairs[:, :, 1] & 15) << 4)).astype(np.uint8).reshape(-1, 128)
    fifth = (q.reshape(-1, 8, 32) >> 4) << np.arange(8)[None, :, None]
    qh = fifth.sum(axis=1).astype(np.uint8)  # (disjoint bits: the sum is their or)
    return b"".join(d[i].astype("<f2").tobytes() + dmin[i].astype("<f2").tobytes() + packed[i].tobytes() + qh[i].tobytes() +
                    qs[i].tobytes() for i in range(len(d)))


def dequantize_k(blocks, kind):
    """GGML's dequantize_row_q4_K / q5_K: d * scale * q - dmin * min, each product rounded."""
    size = 144 if kind == "q4_k" else 176
    out = []
    for i in range(0, len(blocks), size):
        b = blocks[i:i + size]
        d, dmin = (np.frombuffer(b[j:j + 2], "<f2")[0].astype(F32) for j in (0, 2))
        sc = list(b[4:16])
        qs = np.frombuffer(b[size - 128:], np.uint8).astype(np.int64)
        q = np.concatenate([np.concatenate([qs[32 * p:32 * p + 32] & 15, qs[32 * p:32 * p + 32] >> 4]) for p in range(4)])
        if kind == "q5_k":
            qh = np.frombuffer(b[16:48], np.uint8).astype(np.int64)
            q = q + 16 * np.concatenate([(qh >> g) & 1 for g in range(8)])
        y = np.zeros(256, F32)
        for g in range(8):
            if g < 4:
                s, m = sc[g] & 63, sc[g + 4] & 63
            else:
                s, m = (sc[g + 4] & 15) | ((sc[g - 4] >> 6) << 4), (sc[g + 4] >> 4) | ((sc[g] >> 6) << 4)
            step, offset = F32(d * F32(s)), F32(dmin * F32(m))
            y[32 * g:32 * g + 32] = ((step * q[32 * g:32 * g + 32].astype(F32)).astype(F32) - offset).astype(F32)
        out.append(y)
    return np.concatenate(out)


def use_more_bits(i, n):
    """llama-quantize's choice of the layers whose ffn_down (and attn_v) get Q6_K."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def fitted(kind, cols):
    """llama-quantize's fallback where rows are not whole super-blocks of 256."""
    if cols % 256 == 0:
        return kind
    return {"q6_k": "q8_0", "q4_k": "q5_0", "q5_k": "q5_1"}.get(kind, kind)


def k_mix_type(mix, name, cols, n_layer, tied):
    """The type llama-quantize (llama_tensor_get_type, architecture gpt2, no importance matrix)
    gives the GPT-2 matrix `name` (Hugging Face's: "h.3.mlp.c_proj.weight") in a q4_k_m, q5_k_m
    or q6_k file, as llama.cpp 80fb11a's does: the head (lm_head, or wte when tied) q6_k; c_attn
    (GGUF's attn_qkv, which it treats as attn_v) and c_proj of the MLP (ffn_down) q6_k in the
    layers use_more_bits picks; the rest the mix's own type; then the fallback where rows are
    not whole 256s."""
    own = {"q4_k_m": "q4_k", "q5_k_m": "q5_k", "q6_k": "q6_k"}[mix]
    if name == "lm_head.weight" or (name == "wte.weight" and tied):
        return fitted("q6_k", cols)
    kind = own
    if name.endswith(("attn.c_attn.weight", "mlp.c_proj.weight")) and mix != "q6_k" and \
            use_more_bits(int(name.split(".")[1]), n_layer):
        kind = "q6_k"
    return fitted(kind, cols)


def llama_mix_type(mix, name, cols, n_layer, tied):
    """The same for a Llama-family matrix (Hugging Face's name: "model.layers.3.mlp.down_proj.weight";
    architectures llama, qwen2, qwen3): the head (lm_head, or embed_tokens when tied) q6_k;
    v_proj (attn_v) and down_proj (ffn_down) q6_k in the layers use_more_bits picks (q4_k_m and
    q5_k_m); the rest, an untied embed_tokens too, the mix's own type; then the fallback."""
    own = {"q4_k_m": "q4_k", "q5_k_m": "q5_k", "q6_k": "q6_k"}[mix]
    if name == "lm_head.weight" or (name == "model.embed_tokens.weight" and tied):
        return fitted("q6_k", cols)
    kind = own
    if name.endswith(("self_attn.v_proj.weight", "mlp.down_proj.weight")) and mix != "q6_k" and \
            use_more_bits(int(name.split(".")[2]), n_layer):
        kind = "q6_k"
    return fitted(kind, cols)


def quantize_as(kind, x):
    """x (float32, whole blocks) stored as `kind`: (ggml type name, bytes, the floats held)."""
    x = np.ascontiguousarray(x, dtype=np.float32).ravel()
    if kind in ("q4_k", "q5_k"):
        blocks = (q4_k if kind == "q4_k" else q5_k)(x)
        return kind.upper(), blocks, dequantize_k(blocks, kind)
    if kind == "q6_k":
        blocks = q6_k(x)
        return "Q6_K", blocks, dequantize_q6_k(blocks)
    if kind in ("q5_0", "q5_1"):
        blocks = (q5_0 if kind == "q5_0" else q5_1)(x)
        return kind.upper(), blocks, dequantize_q5(blocks, kind)
    blocks = (q8_0 if kind == "q8_0" else q4_0)(x)
    return kind.upper(), blocks, dequantize(blocks, kind)


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
    for kind, quantize in (("q5_0", q5_0), ("q5_1", q5_1)):
        blocks = quantize(x)
        (out / f"{kind}.bin").write_bytes(blocks)
        (out / f"{kind}.dequant.f32").write_bytes(dequantize_q5(blocks, kind).astype("<f4").tobytes())
    blocks = q6_k(x)
    (out / "q6_k.bin").write_bytes(blocks)
    (out / "q6_k.dequant.f32").write_bytes(dequantize_q6_k(blocks).astype("<f4").tobytes())
    for kind, quantize in (("q4_k", q4_k), ("q5_k", q5_k)):
        blocks = quantize(x)
        (out / f"{kind}.bin").write_bytes(blocks)
        (out / f"{kind}.dequant.f32").write_bytes(dequantize_k(blocks, kind).astype("<f4").tobytes())
    (out / "bf16.bin").write_bytes(bf16(x))
    print(f"wrote {x.size // ROW} rows of {ROW} weights to {out}")


if __name__ == "__main__":
    main()
