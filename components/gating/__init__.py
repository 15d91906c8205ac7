"""Quality gate and the corrective loop: judge retrieved evidence, retry with a broader strategy, or flag it."""
