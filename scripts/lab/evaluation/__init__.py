"""Code the lab's scripts share, kept out of the installed package: evaluation sets (:mod:`evaluation.data`),
retrieval metrics (:mod:`evaluation.metrics`), the systems the evaluations compare (:mod:`evaluation.systems`: stock
Haystack baselines and the adaptive pipelines) and the load test's corpus (:mod:`evaluation.corpus`).

Lab scripts run as ``python scripts/lab/NAME.py``, which puts ``scripts/lab/`` first on ``sys.path``, so they import
``from evaluation.metrics import ...``; the tests get the same folder from ``pythonpath`` in ``pyproject.toml``.
The stock baselines need the ``eval`` extra (``pip install -e '.[eval]'``: sentence-transformers-haystack).
"""
