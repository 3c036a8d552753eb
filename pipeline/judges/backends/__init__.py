"""Judges backed by a model you call or run, and the parts they share.

An OpenAI-compatible LLM (`openai_judge.py`: requests planned by `llm_requests.py`, untrusted text
fenced by `fencing.py`, replies read by `llm_output.py`, passages chosen by `passages.py`, cost
estimated by `cost.py`, source stance planned by `source_stance_llm.py`); support-only judges that
score (statement, window) pairs (`nli.py`: an entailment model on the CPU; `minicheck.py`:
Bespoke-MiniCheck behind a server), sharing `support_only.py` and `windows.py`. Every chat
endpoint goes through `llm_client.py` (one completion with log-probabilities), `llm_config.py`
(endpoint and key) and `llm_retry.py` (what is retried, backoff, Retry-After, the bound on
requests in flight). Each backend imports its SDK only when built.
"""
