"""The offline judge: labels every kind without a network or a key (`judge.py` holds the `Judge`).

Support: `support.py` finds the best window of a source for a statement (`embedding.py`: MiniLM in
numpy), scores it with the calibrated model in `params.json`, and `align.py`, `numbers.py` and
`words.py` turn contradictions (negation, direction, a changed figure, a swapped name) into "not
supported". Relevance, stance and confidence are rules: `cues.py` (filler, hedges, boosters),
`stance.py` (the question's proposition and each statement's side, or `unknown`), `lexicon.py` (word
lists). `source_stance.py` gives each source a side on a debate question; `text.py` holds shared
text helpers. Nothing here is imported until the registry builds the judge.
"""
