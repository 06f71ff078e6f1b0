#!/usr/bin/env python3
"""PyTorch eager reference for `topotrain bench step`: the same model shape, batch and thread count
trained with Hugging Face transformers on the CPU (fp32, eager attention, AdamW, clipping at 1.0),
timing whole optimizer steps. Prints one line per shape in the format of topotrain's tokens/s line,
so the two can sit side by side in a table (README, Performance).

Shapes:
  gpt2-124m   GPT2LMHeadModel, 12 x 768, 12 heads, vocab 50257 (examples/gpt2-124m.pbtxt)
  llama-mini  LlamaForCausalLM, 12 x 768, 12 query / 4 key-value heads, SwiGLU 2048, vocab 32000, untied
              (= topotrain's llama preset with those fields; the command is in the README)

Usage: python3 launch/bench_pytorch.py --model gpt2-124m --batch 4 --seq 64 --threads 2 [--steps 5]
Needs torch and transformers (pip); not used by topotrain itself.
"""
import argparse
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def build(name, seq):
    if name == "gpt2-124m":
        return GPT2LMHeadModel(GPT2Config(n_positions=1024, attn_implementation="eager")), 50257
    if name == "llama-mini":
        cfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                          num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=max(seq, 1024),
                          rms_norm_eps=1e-5, tie_word_embeddings=False, attn_implementation="eager")
        return LlamaForCausalLM(cfg), 32000
    raise SystemExit(f"unknown --model {name}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="gpt2-124m")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model, vocab = build(a.model, a.seq)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    x = torch.randint(0, vocab, (a.batch, a.seq + 1))
    inputs, targets = x[:, :-1], x[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(input_ids=inputs).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = (time.perf_counter() - t0) / a.steps
    params = sum(q.numel() for q in model.parameters())
    print(f"pytorch eager | {a.model} | {params / 1e6:.1f}M params | B={a.batch} T={a.seq} | {a.threads} threads | "
          f"torch {torch.__version__}")
    print(f"tokens/s {a.batch * a.seq / dt:.1f} | {dt * 1e3:.1f} ms/step")


if __name__ == "__main__":
    main()
