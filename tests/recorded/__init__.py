"""Recorded run logs, replayed against today's engine: a change of behaviour for an old log fails."""
