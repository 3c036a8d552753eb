"""How fast the `nli` judge's usual models run on this machine's CPU, without downloading any.

Speed depends on a model's architecture, not on its trained weights, so each row builds a
randomly initialised model with the published shape of a model people use with `nli:` (layers,
width, heads, vocabulary) and times forward passes on (window, statement) pairs of a given token
length, in batches as the judge sends them. The figures go in docs/judges/nli.md.

    .venv/bin/python bench/nli_speed.py                       # all shapes, 128/256/512 tokens
    .venv/bin/python bench/nli_speed.py --shapes deberta-v3-base --lengths 256 --batches 3

Timings on a shared machine are noisy: compare rows measured in the same run. Each row gives
pairs per wall-clock second and pairs per CPU second (the work of all torch threads together): on a
quiet machine where each of torch's threads has a core, the wall-clock rate is about the CPU-second
rate times the number of threads.
"""

from __future__ import annotations

import argparse
import json
import time

# Published shapes (config.json of each model family); only what sets the cost of a forward pass.
SHAPES = {
    # MiniCheck-RoBERTa-Large, roberta-large-mnli
    "roberta-large": dict(model_type="roberta", hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                          intermediate_size=4096, vocab_size=50265, max_position_embeddings=514),
    # MiniCheck-DeBERTa-v3-Large, DeBERTa-v3-large NLI models
    "deberta-v3-large": dict(model_type="deberta-v2", hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                             intermediate_size=4096, vocab_size=128100, max_position_embeddings=512,
                             relative_attention=True, position_buckets=256, pos_att_type=["p2c", "c2p"],
                             position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=True, type_vocab_size=0),
    # DeBERTa-v3-base NLI models
    "deberta-v3-base": dict(model_type="deberta-v2", hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, vocab_size=128100, max_position_embeddings=512,
                            relative_attention=True, position_buckets=256, pos_att_type=["p2c", "c2p"],
                            position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=True, type_vocab_size=0),
}


def measure(shape: str, lengths: list[int], batch_size: int, batches: int) -> list[dict]:
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    spec = dict(SHAPES[shape])
    config = AutoConfig.for_model(spec.pop("model_type"), num_labels=3, **spec)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = AutoModelForSequenceClassification.from_config(config).eval()
    built = time.perf_counter() - t0
    rows = []
    for length in lengths:
        ids = torch.randint(5, 1000, (batch_size, length))
        mask = torch.ones_like(ids)
        with torch.inference_mode():
            model(input_ids=ids, attention_mask=mask)  # warm-up
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(batches):
                model(input_ids=ids, attention_mask=mask)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        pairs = batches * batch_size
        # pairs per CPU second: what one core does when it has the core to itself; on a busy
        # machine the wall-clock figure mostly measures the other load
        rows.append({"shape": shape, "tokens": length, "batch": batch_size, "pairs_per_s": round(pairs / seconds, 2),
                     "pairs_per_cpu_s": round(pairs / cpu, 2),
                     "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6), "build_s": round(built, 1),
                     "threads": torch.get_num_threads()})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    parser.add_argument("--lengths", default="128,256,512", help="tokens per (window, statement) pair")
    parser.add_argument("--batch-size", type=int, default=8, help="the judge's default batch size")
    parser.add_argument("--batches", type=int, default=2, help="timed batches per row (after one warm-up)")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        measure(shape.strip(), [int(x) for x in args.lengths.split(",")], args.batch_size, args.batches)


if __name__ == "__main__":
    main()
