"""Classifiers split into features and predictor, and the FedGen generator."""

from fedgen.models.cnn import SplitModel, build_model, predictor_keys

__all__ = ["SplitModel", "build_model", "predictor_keys"]
