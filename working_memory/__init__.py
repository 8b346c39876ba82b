"""Decision-time working memory for a robot decision loop."""
