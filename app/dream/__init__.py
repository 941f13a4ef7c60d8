"""Dreaming: propose consolidations of a user's memories; a human approves; only then apply them."""
