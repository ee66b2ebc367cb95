"""Classifiers split into features and predictor (`fedgen.models.cnn`) and the FedGen generator
(`fedgen.models.generator`)."""
