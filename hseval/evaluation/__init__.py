"""Evaluation: sources (a run's forward pass, a prediction file from elsewhere) go through the
same stages (metrics, geometry, projections) into one writer of the evaluation format."""
