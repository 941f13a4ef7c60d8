"""Engram: long-term memory for LLM agents."""
