"""Report: the ranked result as one JSON-able document, and one renderer per output format."""
