#!/usr/bin/python3
"""Trains a small GPT-2 on the fortune cookie databases of Debian's `fortunes` package (BSD
licence: /usr/share/doc/fortunes/copyright) and writes it in Hugging Face's layout, with a
byte-level BPE tokenizer of its own trained on the same text:

  apt-get install python3-torch python3-regex fortunes
  /usr/bin/python3 tools/train_small_gpt2.py --out tests/data/fortunes-gpt2      (about 12 minutes on 2 cores)

Random weights hide quantization error (near-uniform logits, no outliers); a trained model has
the peaked distributions and outlier weights that make quantization cost something, so it is
the quality reference of every weight format (perplexity --kl-divergence), and the offline
model of scripts/run.sh.

Everything is drawn from --seed: the shuffle of the fortunes, the 95/5 split into training
and held-out text (heldout.txt, written beside the model), the initial weights, the batches.
torch on 2 threads gives the same model on every run on one machine; another torch version or
CPU can differ in the last bits (the tests hold the committed files, not a retrained model, to
their numbers).

Written: config.json, model.safetensors (F16, as the model is committed), vocab.json and
merges.txt (GPT-2's formats: 256 byte tokens, the merges, then <|endoftext|>), heldout.txt.
The network is GPT-2's: learned positions, pre-LayerNorm blocks, tanh GELU, tied LM head; or,
with --arch llama, a Llama's (Hugging Face's LlamaForCausalLM names): RMSNorm, rotary
positions over halves of each head, grouped-query attention (--kv-heads), a gated SiLU
feed-forward (--inner), no biases, the head tied to the embedding, with the same tokenizer:

  /usr/bin/python3 tools/train_small_gpt2.py --arch llama --out tests/data/fortunes-llama \
      --layers 4 --embd 128 --heads 4 --kv-heads 2 --inner 352 --ctx 128

--arch qwen2 adds Qwen2's q/k/v biases. --tokenizer DIR learns a tokenizer made elsewhere instead
of training one (its tokenizer.model, else its tokenizer.json, copied beside the model with
tokenizer_config.json; the text encoded by Google's sentencepiece or by the tokenizer.json
fixtures' own BPE, never by tessera), so that the model generates through that file:

  /usr/bin/python3 tools/train_small_gpt2.py --arch qwen2 --tokenizer tests/data/tokenizer_json/qwen2 \
      --rows 1792 --layers 2 --embd 64 --heads 4 --kv-heads 1 --inner 192 --rope-theta 1000000 \
      --rms-eps 1e-6 --steps 600 --out tests/data/fortunes-qwen2
  /usr/bin/python3 tools/train_small_gpt2.py --arch llama --tokenizer tests/data/tokenizer_json/smollm \
      --layers 2 --embd 64 --heads 2 --kv-heads 2 --inner 192 --rope-theta 100000 --steps 600 \
      --out tests/data/fortunes-smollm
  /usr/bin/python3 tools/train_small_gpt2.py --arch llama --tokenizer tests/data/sentencepiece \
      --tokenizer tests/data/tokenizer_json/llama2 --layers 2 --embd 64 --heads 4 --kv-heads 2 --inner 192 \
      --steps 600 --out tests/data/fortunes-llama2
"""
import argparse
import collections
import json
import math
import pathlib
import random
import struct
import sys
import time

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gpt2_encoder import PATTERN, bytes_to_unicode  # noqa: E402  GPT-2's pre-tokenizer and byte alphabet

FORTUNES = pathlib.Path("/usr/share/games/fortunes")
SKIP = {"ascii-art", "art"}  # pictures, not text


def read_fortunes(seed):
    items = []
    for path in sorted(FORTUNES.iterdir()):
        if path.suffix or path.name in SKIP or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        items += [f.strip("\n") for f in text.split("\n%\n") if f.strip()]
    random.Random(seed).shuffle(items)
    cut = len(items) * 95 // 100
    return items[:cut], items[cut:]


def train_bpe(texts, tokens_wanted):
    """Byte-level BPE: the most frequent adjacent pair within pre-tokenized words, merged
    repeatedly (ties: the smallest pair in byte order, so the result is reproducible), until
    there are tokens_wanted tokens (two merges can make the same token: it is one token)."""
    words = collections.Counter()
    for t in texts:
        for w in PATTERN.findall(t):
            words[tuple(bytes([b]) for b in w.encode("utf-8"))] += 1
    words = {w: c for w, c in words.items()}
    merges, made = [], {bytes([b]) for b in range(256)}
    while len(made) < tokens_wanted:
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best)
        joined = best[0] + best[1]
        made.add(joined)
        new = {}
        for w, c in words.items():
            if len(w) < 2:
                new[w] = new.get(w, 0) + c
                continue
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            key = tuple(out)
            new[key] = new.get(key, 0) + c
        words = new
    return merges


def encode(text, ranks, ids, cache):
    out = []
    for w in PATTERN.findall(text):
        if w not in cache:
            parts = [bytes([b]) for b in w.encode("utf-8")]
            while len(parts) > 1:
                best = min(range(len(parts) - 1), key=lambda i: ranks.get((parts[i], parts[i + 1]), math.inf))
                if (parts[best], parts[best + 1]) not in ranks:
                    break
                parts[best:best + 2] = [parts[best] + parts[best + 1]]
            cache[w] = [ids[p] for p in parts]
        out += cache[w]
    return out


class Block(torch.nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.h = h
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(c), torch.nn.LayerNorm(c)
        self.c_attn, self.c_proj = torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)
        self.c_fc, self.mlp_proj = torch.nn.Linear(c, 4 * c), torch.nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) if hasattr(
            torch.nn.functional, "scaled_dot_product_attention") else self.attend(q, k, v)
        x = x + self.c_proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    @staticmethod
    def attend(q, k, v):
        t = q.shape[2]
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v


class RmsNorm(torch.nn.Module):
    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(c)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, theta):
    """x (b, heads, t, d): Hugging Face's rotate_half over halves of each head."""
    d, t = x.shape[-1], x.shape[-2]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    angle = torch.arange(t, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-b, a], -1) * sin


class LlamaBlock(torch.nn.Module):
    """A Llama block; Qwen2's (qkv_bias) adds biases to the q, k and v projections."""

    def __init__(self, c, h, kv, inner, theta, eps, qkv_bias):
        super().__init__()
        self.h, self.kv, self.d, self.theta = h, kv, c // h, theta
        self.input_layernorm, self.post_attention_layernorm = RmsNorm(c, eps), RmsNorm(c, eps)
        lin = lambda i, o, bias=False: torch.nn.Linear(i, o, bias=bias)  # noqa: E731
        self.q_proj, self.k_proj, self.v_proj = lin(c, c, qkv_bias), lin(c, kv * self.d, qkv_bias), lin(c, kv * self.d, qkv_bias)
        self.o_proj = lin(c, c)
        self.gate_proj, self.up_proj, self.down_proj = lin(c, inner), lin(c, inner), lin(inner, c)

    def forward(self, x):
        b, t, c = x.shape
        n = self.input_layernorm(x)
        q = rope(self.q_proj(n).view(b, t, self.h, self.d).transpose(1, 2), self.theta)
        k = rope(self.k_proj(n).view(b, t, self.kv, self.d).transpose(1, 2), self.theta)
        v = self.v_proj(n).view(b, t, self.kv, self.d).transpose(1, 2)
        k, v = (z.repeat_interleave(self.h // self.kv, dim=1) for z in (k, v))
        a = Block.attend(q, k, v)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, t, c))
        n = self.post_attention_layernorm(x)
        return x + self.down_proj(torch.nn.functional.silu(self.gate_proj(n)) * self.up_proj(n))


class Llama(torch.nn.Module):
    def __init__(self, vocab, c, layers, heads, kv_heads, inner, theta, eps, qkv_bias):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, c)
        self.layers = torch.nn.ModuleList(LlamaBlock(c, heads, kv_heads, inner, theta, eps, qkv_bias) for _ in range(layers))
        self.norm = RmsNorm(c, eps)
        for m in self.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                torch.nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, torch.nn.Linear) and m.bias is not None:
                torch.nn.init.zeros_(m.bias)

    def forward(self, idx):
        x = self.embed_tokens(idx)
        for b in self.layers:
            x = b(x)
        return self.norm(x) @ self.embed_tokens.weight.T


class Gpt2(torch.nn.Module):
    def __init__(self, vocab, ctx, c, layers, heads):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(vocab, c), torch.nn.Embedding(ctx, c)
        self.h = torch.nn.ModuleList(Block(c, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(c)
        for m in self.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                torch.nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.zeros_(m.bias)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.T


def hf_llama_name(name):
    """This script's Llama parameter name -> Hugging Face's ("layers.0.q_proj.weight" ->
    "model.layers.0.self_attn.q_proj.weight")."""
    for part, where in (("q_proj", "self_attn"), ("k_proj", "self_attn"), ("v_proj", "self_attn"), ("o_proj", "self_attn"),
                        ("gate_proj", "mlp"), ("up_proj", "mlp"), ("down_proj", "mlp")):
        name = name.replace(f".{part}.", f".{where}.{part}.")
    return "model." + name


def save(model, cfg, out):
    """Hugging Face's GPT-2 names; Linear [out, in] written as Conv1D [in, out]; F16. A Llama:
    its names under "model.", Linear as it is."""
    tensors = {}
    for name, p in model.state_dict().items():
        a = p.detach().numpy().astype(np.float32)
        if cfg["model_type"] != "gpt2":
            tensors[hf_llama_name(name)] = np.ascontiguousarray(a.astype("<f2"))
            continue
        name = name.replace("mlp_proj", "mlp.c_proj").replace("c_fc", "mlp.c_fc")
        if ".c_attn." in name or (".c_proj." in name and "mlp" not in name):
            name = name.replace("c_attn", "attn.c_attn").replace("c_proj", "attn.c_proj")
        if name.endswith(".weight") and a.ndim == 2 and name.startswith("h."):
            a = a.T
        tensors[name] = np.ascontiguousarray(a.astype("<f2"))
    header, offset = {}, 0
    for name in sorted(tensors):
        n = tensors[name].nbytes
        header[name] = {"dtype": "F16", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + n]}
        offset += n
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(out / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for name in sorted(tensors):
            f.write(tensors[name].tobytes())
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def given_tokenizer(directories, out):
    """A tokenizer trained elsewhere: its files copied into out; how to encode a fortune (by an
    implementation that is not tessera's: Google's sentencepiece for tokenizer.model, the
    tokenizer.json fixtures' own encoder otherwise), the BOS ids each document starts with, the
    id that ends it, and the number of tokens. SentencePiece documents are <s> text </s>, as
    Llama 2's; byte-level ones end with <|endoftext|>, as Qwen's and SmolLM's."""
    import shutil
    for d in map(pathlib.Path, directories):
        for name in ("tokenizer.model", "tokenizer.json", "tokenizer_config.json"):
            if (d / name).exists():
                shutil.copy(d / name, out / name)
    if (out / "tokenizer.model").exists():
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=str(out / "tokenizer.model"))
        return sp.encode, [sp.bos_id()], sp.eos_id(), sp.get_piece_size()
    from make_tokenizer_json_fixtures import Encoder
    enc = Encoder(out)
    added = {t["content"]: t["id"] for t in enc.tokenizer["added_tokens"]}
    size = max(max(enc.vocab.values()), max(added.values())) + 1
    return enc, enc.bos, added["<|endoftext|>"], size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=512, help="tokens, <|endoftext|> included")
    ap.add_argument("--arch", choices=["gpt2", "llama", "qwen2"], default="gpt2")
    ap.add_argument("--kv-heads", type=int, default=2, help="llama, qwen2: key/value heads")
    ap.add_argument("--inner", type=int, default=352, help="llama, qwen2: the feed-forward's width")
    ap.add_argument("--rope-theta", type=float, default=10000.0, help="llama, qwen2")
    ap.add_argument("--rms-eps", type=float, default=1e-5, help="llama, qwen2")
    ap.add_argument("--tokenizer", action="append", default=[],
                    help="llama, qwen2: a directory whose tokenizer the model learns (tokenizer.model, or else "
                         "tokenizer.json), copied beside it with tokenizer_config.json; repeat to copy more files")
    ap.add_argument("--rows", type=int, help="embedding rows past the tokenizer's tokens (Qwen's padding)")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()

    train, held = read_fortunes(args.seed)
    (out / "heldout.txt").write_text("\n\n".join(held) + "\n", encoding="utf-8")
    if args.tokenizer:
        encode_text, bos, eos, size = given_tokenizer(args.tokenizer, out)
        stream = []
        for t in train:
            stream += bos + encode_text(t) + [eos]
        eot = eos
    else:
        merges = train_bpe(train, args.vocab - 1)
        b2c = bytes_to_unicode()
        show = lambda bs: "".join(b2c[b] for b in bs)  # noqa: E731
        tokens = [bytes([b]) for b in range(256)]
        for a, b in merges:
            if a + b not in tokens:
                tokens.append(a + b)
        ids = {t: i for i, t in enumerate(tokens)}
        vocab = {show(t): i for i, t in enumerate(tokens)}
        vocab["<|endoftext|>"] = len(tokens)
        (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False) + "\n", encoding="utf-8")
        (out / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{show(a)} {show(b)}\n" for a, b in merges), encoding="utf-8")
        eot = size = len(tokens)
        size += 1
        ranks = {m: r for r, m in enumerate(merges)}
        cache = {}
        stream = []
        for t in train:
            stream += encode(t, ranks, ids, cache) + [eot]
    rows = max(size, args.rows or 0)
    data = torch.tensor(stream, dtype=torch.long)
    print(f"{len(train)} fortunes, {len(data)} training tokens, vocabulary {size} in {rows} rows ({time.time() - started:.0f} s)")

    model = Gpt2(rows, args.ctx, args.embd, args.layers, args.heads) if args.arch == "gpt2" else \
        Llama(rows, args.embd, args.layers, args.heads, args.kv_heads, args.inner, args.rope_theta, args.rms_eps,
              args.arch == "qwen2")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator().manual_seed(args.seed)
    batch = 32
    for step in range(args.steps):
        lr = 3e-3 * min(1.0, (step + 1) / 100) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(data) - args.ctx - 1, (batch,), generator=gen)
        x = torch.stack([data[s:s + args.ctx] for s in starts])
        y = torch.stack([data[s + 1:s + args.ctx + 1] for s in starts])
        loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, rows), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 200 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {loss.item():.3f} ({time.time() - started:.0f} s)", flush=True)
    if args.arch != "gpt2":
        cfg = {"model_type": args.arch, "architectures": [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}[args.arch]],
               "num_hidden_layers": args.layers, "hidden_size": args.embd, "num_attention_heads": args.heads,
               "num_key_value_heads": args.kv_heads, "intermediate_size": args.inner, "max_position_embeddings": args.ctx,
               "vocab_size": rows, "hidden_act": "silu", "rms_norm_eps": args.rms_eps, "rope_theta": args.rope_theta,
               "tie_word_embeddings": True, "bos_token_id": (bos or [eot])[0] if args.tokenizer else eot, "eos_token_id": eot}
        save(model, cfg, out)
        print(f"wrote {out} ({time.time() - started:.0f} s)")
        return
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": args.layers, "n_head": args.heads,
           "n_embd": args.embd, "n_positions": args.ctx, "n_ctx": args.ctx, "vocab_size": eot + 1,
           "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "bos_token_id": eot, "eos_token_id": eot}
    save(model, cfg, out)
    print(f"wrote {out} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
