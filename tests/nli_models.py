"""Tiny entailment models that the nli judge tests build and save themselves (no hub download).

Each is a BERT sequence classifier with a few hundred weights and a word-level tokenizer made from
the words of the test texts, saved the way `save_pretrained` saves a real model, so the judge loads
it through the same `AutoConfig` / `AutoTokenizer` / `AutoModelForSequenceClassification` calls.
Three kinds of weights:

- `random`: random weights, spread wide enough that different inputs give clearly different
  probabilities (for batching and window tests that compare with a direct computation);
- `constant`: every input gives exactly the class probabilities `probs` (the classifier ignores its
  input and its bias is log(probs)), for golden label-mapping tests;
- `keyword`: the probability of class 0 grows with the share of the word `KEYWORD` among the input
  tokens (attention spreads evenly over the tokens, and one embedding direction marks the keyword),
  so the window holding the keyword is the best one.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Sequence

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
KEYWORD = "confirmed"
HIDDEN = 8


def _tokenizer(corpus: str) -> PreTrainedTokenizerFast:
    words = sorted(set(re.findall(r"\w+|[^\w\s]", corpus.lower())) | {KEYWORD})
    vocab = {w: i for i, w in enumerate(SPECIALS + words)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


def save_tiny_model(folder: Path, labels: Sequence[str], corpus: str, *, kind: str = "random",
                    probs: Sequence[float] = (), seed: int = 0, max_positions: int = 128) -> Path:
    """Build a tiny classifier with these class labels (index order) and save it with its
    tokenizer in `folder`."""
    torch.manual_seed(seed)
    tokenizer = _tokenizer(corpus)
    n = len(labels)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=1 if kind == "keyword" else 2,
        num_attention_heads=1 if kind == "keyword" else 2, intermediate_size=16, max_position_embeddings=max_positions,
        initializer_range=0.5, num_labels=n, id2label=dict(enumerate(labels)), label2id={name: i for i, name in enumerate(labels)},
    )
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        if kind == "constant":
            assert len(probs) == n
            model.classifier.weight.zero_()
            if n == 1:  # one logit read through a sigmoid: the logit of probs[0]
                model.classifier.bias.copy_(torch.tensor([math.log(probs[0] / (1 - probs[0]))]))
            else:
                model.classifier.bias.copy_(torch.tensor([math.log(p) for p in probs]))
        elif kind == "keyword":
            _keyword_weights(model, tokenizer)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _keyword_weights(model: BertForSequenceClassification, tokenizer: PreTrainedTokenizerFast) -> None:
    """Uniform attention (query and key weights zero), values and pooler passed through, the
    feed-forward part silent; the keyword's embedding points along dimension 0, every other word's
    lies in the other dimensions; the class-0 logit reads dimension 0 of the pooled [CLS] vector."""
    g = torch.Generator().manual_seed(1)
    state = model.state_dict()
    for name, tensor in state.items():
        tensor.zero_()
        if name.endswith("LayerNorm.weight"):
            tensor.fill_(1.0)
    words = state["bert.embeddings.word_embeddings.weight"]
    noise = torch.randn(words.shape[0], HIDDEN - 2, generator=g)
    words[:, 2:] = noise - noise.mean(dim=1, keepdim=True)  # zero mean: layer norm leaves dimensions 0 and 1 at zero
    words[tokenizer.convert_tokens_to_ids(KEYWORD)] = torch.tensor([4.0, -4.0] + [0.0] * (HIDDEN - 2))
    eye = torch.eye(HIDDEN)
    for name in ("bert.encoder.layer.0.attention.self.value.weight", "bert.encoder.layer.0.attention.output.dense.weight",
                 "bert.pooler.dense.weight"):
        state[name].copy_(eye)
    state["classifier.weight"][0, 0] = 20.0
    state["classifier.bias"][0] = -2.0
    model.load_state_dict(state)
