"""The Streamlit layer's helpers: cached loaders (`data`), safe text (`render`), figures and
exports (`charts`) and the one list of pages (`pages_registry`). Pages only display; every number
they show comes from the pipeline's Parquet or from a pipeline function."""
