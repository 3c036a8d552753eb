"""Answer-engine audit pipeline: ingest -> annotate -> score -> export."""

__version__ = "0.1.0"
