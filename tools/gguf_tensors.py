#!/usr/bin/python3
"""The tensors of GGUF files, read independently of tessera: list one file's (name, type, shape),
or compare two files tensor by tensor (the same names, types, shapes and bytes):

  /usr/bin/python3 tools/gguf_tensors.py A.gguf            # list
  /usr/bin/python3 tools/gguf_tensors.py A.gguf B.gguf     # compare; exit 1 where they differ

(bench/compare_llama_quantize.sh compares tessera's quantize with llama.cpp's llama-quantize.)
"""
import struct
import sys

# ggml type: (name, elements per block, bytes per block)
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24),
         8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 30: ("BF16", 1, 2)}
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read(path):
    data = open(path, "rb").read()
    at = 0

    def take(fmt):
        nonlocal at
        values = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return values[0]

    def string():
        nonlocal at
        n = take("Q")
        at += n
        return data[at - n:at].decode("utf-8", "replace")

    def value(kind):
        if kind == 8:
            return string()
        if kind == 9:
            inner, n = take("I"), take("Q")
            return [value(inner) for _ in range(n)]
        return take(SCALARS[kind])

    if data[:4] != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    at = 4
    take("I")  # version
    n_tensors, n_kv = take("Q"), take("Q")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take("Q") for _ in range(take("I"))]
        infos.append((name, take("I"), ne, take("Q")))
    align = meta.get("general.alignment", 32)
    start = (at + align - 1) // align * align
    tensors = {}
    for name, kind, ne, offset in infos:
        type_name, block, size = TYPES[kind]
        elements = 1
        for n in ne:
            elements *= n
        tensors[name] = (type_name, ne, data[start + offset:start + offset + elements // block * size])
    return tensors


def main():
    a = read(sys.argv[1])
    if len(sys.argv) == 2:
        for name, (kind, ne, _) in a.items():
            print(f"{name} {kind} {ne}")
        return
    b = read(sys.argv[2])
    differ = sorted(set(a) ^ set(b))
    for name in differ:
        print(f"{name}: only in {'the first' if name in a else 'the second'}")
    types = {}
    for name in sorted(set(a) & set(b)):
        (ka, na, da), (kb, nb, db) = a[name], b[name]
        if (ka, na) != (kb, nb) or da != db:
            differ.append(name)
            print(f"{name}: {ka} {na} against {kb} {nb}" + ("" if (ka, na) != (kb, nb) else ", other bytes"))
        types[ka] = types.get(ka, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(types.items()))
    print(f"{len(a)} and {len(b)} tensors; {len(differ)} differ ({summary})")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
