"""Privacy: the verifiable erase of a user, a project or one memory."""
