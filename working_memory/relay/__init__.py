"""Relays that keep what a restarted working memory cannot get back from a topic itself."""
