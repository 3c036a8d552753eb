"""Audits over time: repeated runs and waves of one query set, how much engines change between
them, and which differences between engines (or waves) are larger than that change.

- captures.py: which wave and which repeat each answer is (from the import's meta or the dates)
- change.py: how much answers and their sources change between repeats of a query
- spread.py: every metric's spread between repeats against the differences between queries and
  engines (ICC with its F interval, variance shares with bootstrap intervals over queries), and rating flips
- differences.py: paired engine-vs-engine and wave-vs-wave differences (paired t over queries, Holm)
- judge_error.py: differences corrected for the judge's measured error where an audit has labels
- summary.py: the precomputed summaries a run writes for the "Over time" page
- cli.py: `aee compare` and `aee consistency`
"""
