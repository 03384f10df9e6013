"""The interpretation pipeline with real models: through transformers, or any OpenAI-compatible server."""
