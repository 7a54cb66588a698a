#!/usr/bin/env python3
"""Writes small byte-level BPE tokenizers in the tokenizer.json layouts of today's models:

    python3 tools/make_tokenizer_json_fixtures.py tests/data/tokenizer_json
    python3 tools/make_tokenizer_json_fixtures.py --encode tests/data/tokenizer_json/qwen2 "Hello"   # ids, by the algorithm
    python3 tools/make_tokenizer_json_fixtures.py --encode-prompt DIR "Hello"                         # BOS first where the file says
    /usr/bin/python3 tools/make_tokenizer_json_fixtures.py --from-sentencepiece tokenizer.model DIR   # its Llama 2 layout

One directory per style, each with tokenizer.json and tokenizer_config.json as Hugging Face's
`tokenizers` and `transformers` write them for that family:

    gpt2    ByteLevel pre-tokenizer; <|endoftext|>; added tokens with lstrip, rstrip, and a non-special one
    llama3  Split(Llama 3's pattern) + ByteLevel, ignore_merges, a BOS template, Llama 3's specials
    qwen2   NFC normalizer, Split(Qwen2's pattern) + ByteLevel, ChatML specials and non-special
            <tool_call> tokens
    smollm  Digits(individual) + ByteLevel, <|endoftext|> <|im_start|> <|im_end|> as ids 0-2
    llama2  SentencePiece-style BPE as transformers converts Llama 2's tokenizer.model (legacy):
            Prepend("▁") + Replace(" ", "▁") normalizer, byte_fallback, <unk>, a BOS template
    mistral the same vocabulary as transformers' non-legacy conversion: a Metaspace
            pre-tokenizer with prepend_scheme "first"

llama2 and mistral convert tests/data/sentencepiece/tokenizer.model (Google's sentencepiece,
Debian python3-sentencepiece) with the merges transformers' SentencePieceExtractor derives from
its scores: every split of a piece into two pieces, ordered by the piece's score.

The vocabularies are trained here (1,500 merges, a plain incremental BPE trainer independent of
tessera's) on committed fixtures (training_corpus), pre-tokenized with Python's `regex` module
and each style's pattern. Deterministic: the same files each run.
"""
import collections
import json
import pathlib
import sys
import unicodedata

import regex

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
MERGES = 1500


def byte_to_char():
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + n)
            n += 1
    return table


B2C = byte_to_char()


def pieces(style, text):
    if style == "gpt2":
        return regex.findall(GPT2, text)
    if style == "llama3":
        return regex.findall(LLAMA3, text)
    if style == "qwen2":
        return regex.findall(QWEN2, text)
    out = []  # smollm: each number alone, GPT-2's pattern between
    for part in regex.split(r"(\p{N})", text):
        if part:
            out += [part] if regex.fullmatch(r"\p{N}", part) else regex.findall(GPT2, part)
    return out


def train(words, merges):
    """Byte-level BPE: repeatedly merge the most frequent adjacent pair (ties: the pair that
    sorts first), counting pairs incrementally over the words that hold them."""
    words = [(list(w), c) for w, c in words.items()]
    pairs = collections.Counter()
    where = collections.defaultdict(set)
    for i, (w, c) in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[a, b] += c
            where[a, b].add(i)
    result = []
    for _ in range(merges):
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        result.append(best)
        for i in sorted(where.pop(best, ())):
            w, c = words[i]
            for a, b in zip(w, w[1:]):
                pairs[a, b] -= c
                if pairs[a, b] <= 0:
                    del pairs[a, b]
            merged, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and (w[j], w[j + 1]) == best:
                    merged.append(w[j] + w[j + 1])
                    j += 2
                else:
                    merged.append(w[j])
                    j += 1
            words[i] = (merged, c)
            for a, b in zip(merged, merged[1:]):
                pairs[a, b] += c
                where[a, b].add(i)
    return result


def added(content, id_, special=True, **flags):
    return {"id": id_, "content": content, "single_word": flags.get("single_word", False),
            "lstrip": flags.get("lstrip", False), "rstrip": flags.get("rstrip", False),
            "normalized": flags.get("normalized", not special), "special": special}


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def split(pattern):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def build(style, corpus):
    if style == "qwen2":
        corpus = unicodedata.normalize("NFC", corpus)
    words = collections.Counter()
    for p in pieces(style, corpus):
        words["".join(B2C[b] for b in p.encode())] += 1
    merges = train(words, MERGES)
    first = 3 if style == "smollm" else 0  # SmolLM's specials come first
    vocab = {}
    for b in range(256):
        vocab[B2C[b]] = first + len(vocab)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = first + len(vocab)
    n = first + len(vocab)
    config = {"model_max_length": 8192, "clean_up_tokenization_spaces": False}
    post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    ignore_merges = False
    if style == "gpt2":
        specials = [added("<|endoftext|>", n), added("<mask>", n + 1, lstrip=True),
                    added("[SEP]", n + 2, rstrip=True), added("word", n + 3, special=False)]
        pre = byte_level(True)
        config.update(bos_token="<|endoftext|>", eos_token="<|endoftext|>", add_bos_token=False)
    elif style == "llama3":
        names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
                 "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                 "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
        specials = [added(t, n + i) for i, t in enumerate(names)]
        pre = {"type": "Sequence", "pretokenizers": [split(LLAMA3), byte_level(False)]}
        ignore_merges = True
        post = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [n], "tokens": ["<|begin_of_text|>"]}}}]}
        config.update(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    elif style == "qwen2":
        specials = [added("<|endoftext|>", n), added("<|im_start|>", n + 1), added("<|im_end|>", n + 2),
                    added("<tool_call>", n + 3, special=False), added("</tool_call>", n + 4, special=False)]
        pre = {"type": "Sequence", "pretokenizers": [split(QWEN2), byte_level(False)]}
        config.update(bos_token=None, eos_token="<|im_end|>", add_bos_token=False)
    else:
        specials = [added("<|endoftext|>", 0), added("<|im_start|>", 1), added("<|im_end|>", 2)]
        pre = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level(True)]}
        config.update(bos_token="<|im_start|>", eos_token="<|im_end|>", add_bos_token=False)
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": specials,
        "normalizer": {"type": "NFC"} if style == "qwen2" else None,
        "pre_tokenizer": pre, "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": vocab, "merges": [[a, b] if style == "qwen2" else f"{a} {b}" for a, b in merges]},
    }
    config["added_tokens_decoder"] = {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in specials}
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    return tokenizer, config


class Encoder:
    """Texts' ids under one of these tokenizer.json files, by the algorithm itself (for the model
    fixtures' prompts and training text): added tokens as text, the style's pre-tokenizer
    (Python's regex), NFC where the file asks, then BPE merging the lowest-ranked pair, leftmost
    first; a prompt starts with the BOS the post-processor's template puts first."""

    def __init__(self, directory):
        d = pathlib.Path(directory)
        self.tokenizer = tokenizer = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
        steps = tokenizer["pre_tokenizer"].get("pretokenizers", [tokenizer["pre_tokenizer"]])
        split = [st["pattern"]["Regex"] for st in steps if st["type"] == "Split"]
        self.style = ("llama3" if split == [LLAMA3] else "qwen2" if split == [QWEN2] else
                      "smollm" if any(st["type"] == "Digits" for st in steps) else "gpt2")
        self.vocab = tokenizer["model"]["vocab"]
        self.ranks = {}
        for i, m in enumerate(tokenizer["model"]["merges"]):
            a, b = m.split(" ") if isinstance(m, str) else m
            self.ranks.setdefault((a, b), i)
        self.bos = []
        post = tokenizer.get("post_processor") or {}
        for step in post.get("processors", [post]):
            if step.get("type") == "TemplateProcessing" and "SpecialToken" in step["single"][0]:
                bos = step["single"][0]["SpecialToken"]["id"]
                self.bos.append(next(t["id"] for t in tokenizer["added_tokens"] if t["content"] == bos))
        self.cache = {}

    def __call__(self, text, prompt=False):
        if self.tokenizer.get("normalizer"):
            text = unicodedata.normalize("NFC", text)
        ids = list(self.bos) if prompt else []
        for piece in pieces(self.style, text):
            if piece not in self.cache:
                self.cache[piece] = self.merge(piece)
            ids += self.cache[piece]
        return ids

    def merge(self, piece):
        symbols = [B2C[b] for b in piece.encode()]
        if self.tokenizer["model"].get("ignore_merges") and "".join(symbols) in self.vocab:
            return [self.vocab["".join(symbols)]]
        while len(symbols) > 1:
            rank, i = min((self.ranks.get((symbols[i], symbols[i + 1]), float("inf")), i) for i in range(len(symbols) - 1))
            if rank == float("inf"):
                break
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        return [self.vocab[s] for s in symbols]


def encode(directory, text, prompt=False):
    return Encoder(directory)(text, prompt)


def sentencepiece_style(style, model_file=ROOT / "tests/data/sentencepiece/tokenizer.model"):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=str(model_file))
    n = sp.get_piece_size()
    vocab = {sp.id_to_piece(i): i for i in range(n)}
    scores = {sp.id_to_piece(i): sp.get_score(i) for i in range(n)}
    merges = []
    for piece, score in scores.items():
        local = [(piece[:k], piece[k:], score) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        merges += sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]]))
    merges = [(a, b) for a, b, _ in sorted(merges, key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)]
    specials = [added(sp.id_to_piece(i), i) for i in range(n) if sp.is_control(i) or sp.is_unknown(i)]
    for t in specials:
        t["normalized"] = False
    mark = "\u2581"
    bos = sp.id_to_piece(sp.bos_id())
    post = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [sp.bos_id()], "tokens": [bos]}}}
    # transformers' LlamaConverter: the same decoder either way
    decoder = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": mark}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    if style == "llama2":
        normalizer = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": mark},
                                                          {"type": "Replace", "pattern": {"String": " "}, "content": mark}]}
        pre = None
    else:
        normalizer = None
        pre = {"type": "Metaspace", "replacement": mark, "prepend_scheme": "first", "split": False}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": specials, "normalizer": normalizer,
        "pre_tokenizer": pre, "post_processor": post, "decoder": decoder,
        "model": {"type": "BPE", "dropout": None, "unk_token": sp.id_to_piece(sp.unk_id()), "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    config = {"add_bos_token": True, "add_eos_token": False, "bos_token": bos, "eos_token": sp.id_to_piece(sp.eos_id()),
              "unk_token": sp.id_to_piece(sp.unk_id()), "legacy": style == "llama2", "clean_up_tokenization_spaces": False,
              "tokenizer_class": "LlamaTokenizerFast"}
    return tokenizer, config


def training_corpus():
    """Committed fixtures only, so that the vocabularies never change with the project's text:
    the held-out fortunes (tests/data/fortunes-gpt2/heldout.txt, English) and the 2,198 texts of
    tests/data/tokenizer/vectors.jsonl (every script, emoji, code, white space)."""
    heldout = (ROOT / "tests/data/fortunes-gpt2/heldout.txt").read_text(encoding="utf-8")
    vectors = [json.loads(line)["text"] for line in (ROOT / "tests/data/tokenizer/vectors.jsonl").read_text(encoding="utf-8").splitlines()]
    return heldout + "\n".join(vectors)


def main():
    if len(sys.argv) == 4 and sys.argv[1] in ("--encode", "--encode-prompt"):  # DIR TEXT: the ids as "1,2,3"
        print(",".join(str(i) for i in encode(sys.argv[2], sys.argv[3], sys.argv[1] == "--encode-prompt")))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--from-sentencepiece":  # MODEL_FILE DIR: its Llama 2 layout (bench/)
        write(pathlib.Path(sys.argv[3]), *sentencepiece_style("llama2", pathlib.Path(sys.argv[2])))
        return
    out = pathlib.Path(sys.argv[1])
    corpus = training_corpus()
    for style in ("gpt2", "llama3", "qwen2", "smollm", "llama2", "mistral"):
        write(out / style, *(sentencepiece_style(style) if style in ("llama2", "mistral") else build(style, corpus)))


def write(d, tokenizer, config):
    d.mkdir(parents=True, exist_ok=True)
    (d / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (d / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(d, len(tokenizer["model"]["vocab"]) + len(tokenizer["added_tokens"]), "tokens")


if __name__ == "__main__":
    main()
