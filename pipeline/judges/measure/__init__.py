"""Measuring judges: how far each one can be trusted, and on what evidence.

Agreement with expert labels (`agreement.py`: ExpertQA; `agreement_hagrid.py`: HAGRID), the
behavioural check suite (`checks.py`, cases in data/judge_checks/), labelled support pairs beyond
ExpertQA and AUC against plain coverage (`support_eval.py`), the uncertain band around a scored
judge's cut points (`reliability.py`), and refitting the offline support model (`calibration.py`
on pairs from `synthetic_pairs.py`). These read judges' verdicts; no judge imports them.
"""
