"""Conflicting evidence: which sides answers take (`sides`) and a probe of which evidence a model
finds convincing (`probe_data`, `perturb`, `probe_ask`, `probe_stats`, `probe_run`, `cli`).

The probe follows the win-rate design of Wan et al. (ConflictingQA): for a yes/no question, the
model sees one "yes" and one "no" paragraph, in both orders, for every such pair, and a paragraph's
win-rate is how often the answer takes its side. Perturbing paragraphs (a relevance prefix, added
references, tone rewrites, an irrelevant sentence as the control) shows what moves the win-rate.
"""
