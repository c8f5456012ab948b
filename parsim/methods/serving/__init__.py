"""Requests under load: a request-level simulation of a serving system (schedulers, KV blocks, replicas)."""
