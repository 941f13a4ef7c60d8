"""Portability: export (JSON and Markdown), import, and re-embedding after an embed model swap."""
