"""Selection of a final, diverse list from fused candidates."""
