"""Change events out of the service: webhooks (signed, retried, dead-lettered) and the live stream."""
