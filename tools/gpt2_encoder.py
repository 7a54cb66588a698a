#!/usr/bin/env python3
"""OpenAI's original GPT-2 encoder algorithm (gpt-2/src/encoder.py), run with the `regex`
module: the canonical answer for tessera's tokenizer tests. Written from that algorithm's
description; nothing here is tuned for speed.

    /usr/bin/python3 tools/gpt2_encoder.py --vocab tests/data/gpt2/vocab.json \\
        --merges tests/data/gpt2/merges.txt < strings.jsonl > ids.jsonl

Each input line is a JSON string; each output line is the JSON array of its ids.
"""
import argparse
import json
import sys

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable unicode characters."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars)))


class Encoder:
    def __init__(self, vocab_path, merges_path):
        with open(vocab_path, encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(merges_path, encoding="utf-8") as f:
            lines = f.read().split("\n")[1:]  # the first line is "#version: 0.2"
        merges = [tuple(line.split()) for line in lines if line.strip()]
        self.ranks = dict(zip(merges, range(len(merges))))
        self.byte_encoder = bytes_to_unicode()
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            merged = []
            i = 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = tuple(merged)
        self.cache[token] = word
        return word

    def encode(self, text):
        ids = []
        for piece in PATTERN.findall(text):
            token = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(token))
        return ids


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--merges", required=True)
    args = parser.parse_args()
    enc = Encoder(args.vocab, args.merges)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(enc.encode(json.loads(line))))


if __name__ == "__main__":
    main()
