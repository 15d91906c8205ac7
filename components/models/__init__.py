"""Model export (ONNX fp32 / INT8) and ONNX Runtime embedders."""
