"""Capture: turn a live host, a bundle or pasted files into a set of artifacts."""
