"""Diffusers: the sub-agents that turn an event's words into a proposed delta."""
