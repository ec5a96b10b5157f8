"""Explanations of trained models: attention heatmaps and filter activations."""
