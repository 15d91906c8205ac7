"""Rerankers: late interaction (MaxSim over token embeddings) and cross-encoders, both on ONNX Runtime."""
