"""The inspector: a web UI at /inspector over the public REST API, served from files in this package."""
