"""trick-arena: a bot-tournament arena for trick-taking card games."""

__version__ = "0.1.0"
