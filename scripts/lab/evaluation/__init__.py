"""Code the scripts share, kept out of the installed package: evaluation sets (:mod:`evaluation.data`), retrieval
metrics (:mod:`evaluation.metrics`), the systems the evaluations compare (:mod:`evaluation.systems`: stock Haystack
baselines and the adaptive pipelines) and the demo corpus (:mod:`evaluation.corpus`).

Scripts run as ``python scripts/NAME.py``, which puts ``scripts/`` first on ``sys.path``, so they import
``from evaluation.metrics import ...``; the tests put ``scripts/`` on the path in ``tests/conftest.py``. The stock
baselines need the ``eval`` extra (``pip install -e '.[eval]'``: sentence-transformers-haystack).
"""
