"""Shared spaces: a tenant's team or project scopes, the agents granted on them, and governed promotion."""
